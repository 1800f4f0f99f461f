"""Offline judges that fail on purpose, shipped to Ray workers by value."""

from __future__ import annotations

import os
from pathlib import Path

from maev_kit.judges import HeuristicJudge


class ExitOnceJudge(HeuristicJudge):
    """Kills its worker process (``os._exit``) the first time it sees ``marker_conversation``."""

    def __init__(self, marker_conversation: str, flag: str):
        super().__init__()
        self.marker, self.flag = marker_conversation, flag

    def judge_items(self, items):
        if any(it.conversation_id == self.marker for it in items):
            try:
                fd = os.open(self.flag, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                pass
            else:
                os.close(fd)
                os._exit(1)
        return super().judge_items(items)


class FailOnJudge(HeuristicJudge):
    """Raises on any block that holds ``marker_conversation``; counts the items it judged."""

    def __init__(self, marker_conversation: str, log: str):
        super().__init__()
        self.marker, self.log = marker_conversation, log

    def judge_items(self, items):
        if any(it.conversation_id == self.marker for it in items):
            raise RuntimeError("preempted")
        with Path(self.log).open("a") as f:
            f.write("".join(f"{it.conversation_id}\n" for it in items))
        return super().judge_items(items)
