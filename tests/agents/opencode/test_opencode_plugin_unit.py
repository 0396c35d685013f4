"""ralphctl's OpenCode plugin on its own, in Node with a stand-in OpenCode client and a
stand-in hook: what it sends the hook, when it prompts, and that every failure does nothing.
(The real CLI runs it in test_opencode_plugin.py.)"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ralphctl.plugin.layout import Interpreter
from ralphctl.plugin.targets.opencode import plugin_file

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")

#: Loads the plugin (OpenCode's folder: cwd), answers ``client.session.messages`` with the
#: conversation so far (each prompt the plugin sends is added to it), fires ``session.idle``
#: IDLES times, and prints the prompts sent.
DRIVER = """
const [pluginPath, conversationJson, idles, failMessages, cwd] = process.argv.slice(2)
const conversation = JSON.parse(conversationJson)
const prompts = []
const client = { session: {
  messages: async () => {
    if (failMessages === "yes") throw new Error("server gone")
    return { data: conversation }
  },
  promptAsync: async ({ path, body }) => {
    prompts.push({ id: path.id, body })
    const text = body.parts[0].text
    conversation.push({ info: { role: "user" }, parts: [{ type: "text", text }] })
    conversation.push({ info: { role: "assistant", path: { cwd } },
                        parts: [{ type: "text", text: "Again." }] })
  },
} }
const { RalphctlPlugin } = await import(pluginPath)
const hooks = await RalphctlPlugin({ client, directory: cwd })
await hooks.event({ event: { type: "session.updated", properties: { sessionID: "ses_1" } } })
for (let i = 0; i < Number(idles); i++) {
  await hooks.event({ event: { type: "session.idle", properties: { sessionID: "ses_1" } } })
}
console.log(JSON.stringify(prompts))
"""
#: Stands in for ralphctl's hook: records stdin and argv, answers $ANSWER, exits $STATUS.
FAKE_HOOK = """
import json, os, sys
with open(os.environ["INPUTS"], "a") as log:
    log.write(json.dumps({"argv": sys.argv[1:], "stdin": json.loads(sys.stdin.read())}) + "\\n")
sys.stdout.write(os.environ["ANSWER"])
sys.exit(int(os.environ.get("STATUS", "0")))
"""
BLOCK = json.dumps({"decision": "block", "reason": "Continue the task."})
CONVERSATION: list[dict[str, Any]] = [
    {
        "info": {"role": "user", "agent": "build", "model": {"providerID": "p", "modelID": "m"}},
        "parts": [{"type": "text", "text": "Write the notes."}],
    },
    {
        "info": {"role": "assistant", "path": {"cwd": "{cwd}"}},
        "parts": [
            {"type": "reasoning", "text": "thinking"},
            {"type": "text", "text": "Working."},
            {"type": "text", "text": "Still.", "synthetic": True},
        ],
    },
]


def drive(
    tmp_path: Path,
    answer: str,
    *,
    idles: int = 1,
    status: int = 0,
    python: str = sys.executable,
    conversation: list[dict[str, Any]] = CONVERSATION,
    fail_messages: bool = False,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The prompts the plugin sent and the hook calls it made."""
    fake = tmp_path / "fake_hook.py"
    fake.write_text(FAKE_HOOK)
    plugin = tmp_path / "ralphctl.mjs"
    plugin.write_text(plugin_file(Interpreter(python, hook_file=str(fake))))
    inputs = tmp_path / "inputs.jsonl"
    env = {"PATH": "/usr/bin:/bin", "INPUTS": str(inputs), "ANSWER": answer, "STATUS": str(status)}
    history = json.dumps(conversation).replace("{cwd}", str(tmp_path))
    done = subprocess.run(
        [
            *(str(NODE), "--input-type=module", "-", str(plugin), history, str(idles)),
            *("yes" if fail_messages else "no", str(tmp_path)),
        ],
        input=DRIVER,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    calls = (
        [json.loads(line) for line in inputs.read_text().splitlines()] if inputs.exists() else []
    )
    return json.loads(done.stdout), calls


def test_a_block_prompts_the_session_with_the_reason_as_its_user_would(tmp_path):
    prompts, calls = drive(tmp_path, BLOCK)

    assert prompts == [
        {
            "id": "ses_1",
            "body": {
                "parts": [{"type": "text", "text": "Continue the task."}],
                "agent": "build",
                "model": {"providerID": "p", "modelID": "m"},
            },
        }
    ]
    ((call),) = calls
    assert call["argv"] == ["stop", "--format", "opencode"]
    assert call["stdin"] == {
        "hook_event_name": "session.idle",
        "session_id": "ses_1",
        "cwd": str(tmp_path),
        "last_assistant_message": "Working.",
        "status": "completed",
        "stop_hook_active": False,
    }


def test_the_idle_after_its_own_prompt_is_marked_and_a_users_message_clears_the_mark(tmp_path):
    _, calls = drive(tmp_path, BLOCK, idles=2)
    assert [c["stdin"]["stop_hook_active"] for c in calls] == [False, True]

    talked: list[dict[str, Any]] = [
        *CONVERSATION,
        {"info": {"role": "user"}, "parts": [{"type": "text", "text": "Hi"}]},
    ]
    (tmp_path / "again").mkdir()
    _, calls = drive(tmp_path / "again", BLOCK, conversation=talked)
    assert [c["stdin"]["stop_hook_active"] for c in calls] == [False]


def test_a_failed_turn_is_reported_as_such(tmp_path):
    failed = [
        CONVERSATION[0],
        {"info": {"role": "assistant", "error": {"name": "APIError"}}, "parts": []},
    ]
    _, ((call),) = drive(tmp_path, "", conversation=failed)
    assert (call["stdin"]["status"], call["stdin"]["last_assistant_message"]) == ("error", "")


@pytest.mark.parametrize(
    ("answer", "status"),
    [
        ("", 0),  # an allowed stop prints nothing
        ('{"decision": "block", "reason": ""}', 0),
        ('{"decision": "deny", "reason": "x"}', 0),
        ("not json", 0),
        ("[1, 2]", 0),
        (BLOCK, 1),  # a hook that failed is not believed
    ],
)
def test_anything_but_a_block_with_a_reason_does_nothing(tmp_path, answer, status):
    prompts, calls = drive(tmp_path, answer, status=status)
    assert (prompts, len(calls)) == ([], 1)


def test_a_missing_hook_or_client_failure_does_nothing(tmp_path):
    assert drive(tmp_path, BLOCK, python="/nonexistent/python3") == ([], [])
    assert drive(tmp_path, BLOCK, fail_messages=True) == ([], [])
