-- The schema of a label store made by maev-kit before criterion labels (schema version 1,
-- with the in_sample column), SQLite: kept as it was, so the migration is tested against what
-- exists. One statement per line group, each ending with a semicolon at the end of a line.
CREATE TABLE maev_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE maev_labels (id INTEGER PRIMARY KEY AUTOINCREMENT, label_id TEXT NOT NULL UNIQUE, item_id TEXT NOT NULL, annotator TEXT NOT NULL, label TEXT NOT NULL CHECK (label IN ('retained', 'lost', 'contradicted', 'skip')), note TEXT NOT NULL DEFAULT '', created_at TEXT NOT NULL DEFAULT '', source TEXT, in_sample BOOLEAN, stored_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')));
CREATE INDEX maev_labels_by_annotator ON maev_labels (annotator, id);
CREATE TRIGGER maev_labels_no_update BEFORE UPDATE ON maev_labels BEGIN SELECT RAISE(ABORT, 'maev_labels is append-only: UPDATE refused'); END;
CREATE TRIGGER maev_labels_no_delete BEFORE DELETE ON maev_labels BEGIN SELECT RAISE(ABORT, 'maev_labels is append-only: DELETE refused'); END;
