"""``maev serve-fake``: run the local OpenAI-compatible server until stopped."""

from __future__ import annotations

import signal
import sys

import click

from maev_kit.testing import FAIL_MODES

__all__ = ["serve_fake"]


@click.command("serve-fake")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0 picks a free one and prints it).")
@click.option("--latency", default=0.0, show_default=True, type=click.FloatRange(min=0.0),
              help="Seconds to wait before each reply.")
@click.option("--fail", default=None,
              type=click.Choice(FAIL_MODES),
              help="Fail every request one way: 401 (bad key), 429 (rate-limited forever), 500 "
                   "(server error forever), timeout (never answer), garbage (a body that is not "
                   "JSON), prose (a reply whose text is not JSON).")
@click.option("--batch-delay", default=1.0, show_default=True, type=click.FloatRange(min=0.0),
              help="Seconds from creating a batch (POST /v1/batches) to its end.")
@click.option("--batch-fail-rate", default=0.0, show_default=True,
              type=click.FloatRange(0.0, 1.0),
              help="Share of batch lines that fail (into the batch's error file).")
@click.option("--batch-expire", default=0, show_default=True, type=click.IntRange(min=0),
              help="Let the first N batches expire with half their lines answered.")
@click.option("--batch-fail", default=0, show_default=True, type=click.IntRange(min=0),
              help="Let the first N batches fail outright (no output).")
@click.option("--slots", default=None, type=click.IntRange(min=1),
              help="Work on at most N requests at once, queueing the others (1: one at a "
                   "time, like llama.cpp's server on a small machine).")
@click.option("--model", "models", multiple=True,
              help="A model name served (repeat for several): listed at /v1/models; a request "
                   "for another name gets 404. Default: any name.")
def serve_fake(host: str, port: int, latency: float, fail: str | None, batch_delay: float,
               batch_fail_rate: float, batch_expire: int, batch_fail: int, slots: int | None,
               models: tuple[str, ...]) -> None:
    """Serve POST /v1/chat/completions locally, answering the retention prompt with the heuristic
    judge, until Ctrl-C; also the batch API (/v1/files, /v1/batches) that `maev score --batch`
    uses, each batch ending after --batch-delay seconds.

    Point a judge at it with LiteLLMBackend("openai/fake", api_base=URL, api_key="x") or
    OpenAIClientBackend(AsyncOpenAI(base_url=URL, api_key="x"), "fake"). With --fail it
    answers every request with that failure instead, to see how a run reports it.
    """
    from maev_kit.testing import FakeOpenAIServer

    server = FakeOpenAIServer(latency=latency, host=host, port=port, fail=fail,
                              batch_delay=batch_delay, batch_fail_rate=batch_fail_rate,
                              batch_expire=batch_expire, batch_fail=batch_fail, slots=slots,
                              models=models or None)
    try:
        server.start()
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror or exc}; "
                                   "pick another --port (0 chooses a free one)") from exc
    # SIGTERM stops as cleanly as Ctrl-C.
    signal.signal(signal.SIGTERM, lambda *_: server._stopping.set())
    mode = f"; failing every request: {fail}" if fail else ""
    mode += f"; {slots} slot{'s' if slots != 1 else ''}" if slots else ""
    mode += f"; serving {', '.join(models)}" if models else ""
    faults = [f"{batch_fail_rate:g} of lines fail"] if batch_fail_rate else []
    faults += [f"first {batch_expire} expire"] if batch_expire else []
    faults += [f"first {batch_fail} fail"] if batch_fail else []
    mode += "; ".join([f"; batches end after {batch_delay:g} s", *faults])
    click.echo(f"Fake OpenAI-compatible server at {server.base_url} (latency {latency:g} s"
               f"{mode}); Ctrl-C to stop", err=False)
    sys.stdout.flush()
    try:
        server.serve_until_stopped()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        click.echo(f"stopped after {len(server.requests)} request(s)")


if __name__ == "__main__":  # pragma: no cover - `python -m maev_kit.cli._serve_fake`
    serve_fake()
