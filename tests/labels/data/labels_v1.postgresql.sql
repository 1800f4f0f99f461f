-- The schema of a label store made by maev-kit before criterion labels (schema version 1,
-- with the in_sample column), PostgreSQL: kept as it was, so the migration is tested against what
-- exists. One statement per line group, each ending with a semicolon at the end of a line.
CREATE TABLE maev_meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE maev_labels (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, label_id text NOT NULL UNIQUE, item_id text NOT NULL, annotator text NOT NULL, label text NOT NULL CHECK (label IN ('retained', 'lost', 'contradicted', 'skip')), note text NOT NULL DEFAULT '', created_at text NOT NULL DEFAULT '', source text, in_sample boolean, stored_at timestamptz NOT NULL DEFAULT now());
CREATE INDEX maev_labels_by_annotator ON maev_labels (annotator, id);
CREATE OR REPLACE FUNCTION maev_labels_append_only() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'maev_labels is append-only: % refused', TG_OP; END$$;
CREATE TRIGGER maev_labels_no_change BEFORE UPDATE OR DELETE ON maev_labels FOR EACH ROW EXECUTE FUNCTION maev_labels_append_only();
CREATE TRIGGER maev_labels_no_truncate BEFORE TRUNCATE ON maev_labels FOR EACH STATEMENT EXECUTE FUNCTION maev_labels_append_only();
