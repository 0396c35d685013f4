"""Reversible settings edits: add, then take back exactly what was added."""

from __future__ import annotations

import pytest

from ralphctl.plugin.jsonedit import Edit, SettingsError, append_item, revert, set_key

HOOK = {"hooks": [{"type": "command", "command": "x"}]}


def test_setting_a_new_key_creates_its_objects_and_revert_removes_them_again():
    original = {"model": "opus"}
    edited, edit = set_key(original, ("enabledPlugins", "ralphctl@ralphctl"), True)
    assert edited == {"model": "opus", "enabledPlugins": {"ralphctl@ralphctl": True}}
    assert original == {"model": "opus"}  # inputs are never mutated
    assert edit.created == (("enabledPlugins",),)
    assert revert(edited, edit) == original


def test_setting_a_key_that_existed_restores_its_old_value():
    original = {"enabledPlugins": {"ralphctl@ralphctl": False, "other@x": True}}
    edited, edit = set_key(original, ("enabledPlugins", "ralphctl@ralphctl"), True)
    assert edit.had_previous
    assert edit.previous is False
    assert revert(edited, edit) == original


def test_appending_to_a_list_and_reverting_keeps_the_users_items():
    original = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "mine"}]}]}}
    edited, edit = append_item(original, ("hooks", "Stop"), HOOK)
    assert edited["hooks"]["Stop"][-1] == HOOK
    assert edit.created == ()
    assert revert(edited, edit) == original


def test_appending_creates_the_list_and_objects_it_needs():
    edited, edit = append_item({}, ("hooks", "Stop"), HOOK)
    assert edited == {"hooks": {"Stop": [HOOK]}}
    assert revert(edited, edit) == {}


def test_keys_added_after_the_edit_survive_its_revert():
    edited, edit = append_item({}, ("hooks", "Stop"), HOOK)
    edited["hooks"]["PreToolUse"] = [{"hooks": []}]
    edited["theme"] = "dark"
    assert revert(edited, edit) == {"hooks": {"PreToolUse": [{"hooks": []}]}, "theme": "dark"}


def test_revert_removes_only_one_copy_of_an_appended_item():
    edited, edit = append_item({"hooks": {"Stop": [HOOK]}}, ("hooks", "Stop"), HOOK)
    assert revert(edited, edit) == {"hooks": {"Stop": [HOOK]}}


def test_revert_tolerates_what_the_user_removed_or_reshaped():
    _, edit = set_key({}, ("enabledPlugins", "ralphctl@ralphctl"), True)
    assert revert({}, edit) == {}
    assert revert({"enabledPlugins": "odd"}, edit) == {"enabledPlugins": "odd"}
    _, append = append_item({}, ("hooks", "Stop"), HOOK)
    assert revert({"hooks": {"Stop": "odd"}}, append) == {"hooks": {"Stop": "odd"}}


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"hooks": []}, "hooks is not a JSON object"),
        ({"hooks": {"Stop": {}}}, r"hooks\.Stop is not a JSON array"),
    ],
)
def test_a_document_of_the_wrong_shape_is_an_error(document, message):
    with pytest.raises(SettingsError, match=message):
        append_item(document, ("hooks", "Stop"), HOOK)


def test_an_edit_round_trips_through_json():
    _, edit = set_key({"a": {"b": [1]}}, ("a", "b"), {"x": None})
    assert Edit.from_json(edit.to_json()) == edit
