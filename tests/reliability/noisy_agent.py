"""A stand-in for ``claude -p`` that prints what no agent should: garbage, NUL bytes, invalid
UTF-8 and one line of ``NOISY_LINE_BYTES`` bytes (generated, never stored), then a normal
``result`` line costing $0.5. Stdlib only; arguments are ignored."""

from __future__ import annotations

import json
import os
import sys

PIECE = 1024 * 1024


def main() -> None:
    sys.stdin.buffer.read()
    out = sys.stdout.buffer
    out.write(b'{"type":"system","subtype":"init","session_id":"noisy","model":"noisy"}\n')
    out.write(b"garbage: not json at all {\n\x00\x00\x00 NUL bytes\n\xff\xfe\xc3 invalid UTF-8\n")
    left = int(os.environ.get("NOISY_LINE_BYTES", "0"))
    while left > 0:
        piece = min(PIECE, left)
        out.write(b"x" * piece)
        left -= piece
    out.write(b"\n")
    result = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "survived",
        "session_id": "noisy",
        "total_cost_usd": 0.5,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    out.write(json.dumps(result).encode() + b"\n")
    out.flush()


if __name__ == "__main__":
    main()
