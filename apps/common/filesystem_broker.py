"""kombu's filesystem transport, the broker `make run` uses without a broker process, with
each message file complete before a worker can see it.

kombu opens a message file under its final name and then writes it: a worker listing the
folder in between takes the empty file, cannot decode it and stops ("Unrecoverable error:
JSONDecodeError"), and `make run` stops everything with it. Here a message is written under
a name no queue reads and renamed when complete (a rename is atomic on one filesystem).
"""

from __future__ import annotations

import os
import uuid
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.json import dumps

# kombu reads `<time>_<uuid>.<queue>.msg` only: a name with this suffix is passed over.
PARTIAL_SUFFIX = ".partial"


class Channel(filesystem.Channel):
    # kombu's filesystem Channel takes **kwargs where its virtual base does not: the same
    # signature as the method replaced, which the stubs' two bases cannot both accept.
    def _put(self, queue: str, payload: dict[str, Any], **kwargs: Any) -> None:  # type: ignore[override]
        """Put `payload` onto `queue`, visible only once written whole."""
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = final + PARTIAL_SUFFIX
        try:
            with open(partial, "wb") as written:
                written.write(dumps(payload).encode())
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel
