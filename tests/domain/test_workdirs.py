"""Which directories a loop may work in: the one rule the API, the CLI and the hook share."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ralphctl.domain.workdirs import SYSTEM_DIRS, VIRTUAL_TREES, workdir_refusal

HOME = "/home/ada"


@pytest.mark.parametrize(
    ("given_path", "resolved", "words"),
    [
        ("/", "/", "the filesystem root"),
        ("//", "//", "the filesystem root"),
        ("/proc/self/cwd", "/home/ada/project", "inside /proc"),
        ("/sys/kernel", "/sys/kernel", "inside /sys"),
        ("/dev/shm/work", "/dev/shm/work", "inside /dev"),
        ("/etc", "/etc", "a system directory"),
        ("/usr/", "/usr", "a system directory"),
        ("/home/ada", "/home/ada", "the home directory itself"),
        ("/home/ada/../ada/", "/home/ada", "the home directory itself"),
        ("/home/ada/root-link", "/", "(really /)"),
        ("/home/ada/etc-link", "/etc", "(really /etc)"),
        ("relative/dir", "/x/relative/dir", "not an absolute path"),
    ],
)
def test_what_no_user_means_as_a_project_is_refused_with_the_reason(given_path, resolved, words):
    refusal = workdir_refusal(given_path, resolved, HOME)
    assert refusal is not None
    assert words in refusal
    assert refusal.startswith(given_path)
    assert refusal.endswith("use a project directory")


@pytest.mark.parametrize(
    "path",
    ["/home/ada/project", "/usr/src/app", "/opt/tool", "/srv/www/site", "/tmp/try", "/tmp"],
)
def test_project_directories_are_accepted(path):
    assert workdir_refusal(path, path, HOME) is None


def test_without_a_home_only_the_system_rules_apply():
    assert workdir_refusal("/home/ada", "/home/ada", None) is None


@given(st.sampled_from(sorted(SYSTEM_DIRS)), st.sampled_from(["", "/", "/."]))
def test_every_system_directory_is_refused_however_it_is_spelled(directory, tail):
    assert workdir_refusal(directory + tail, directory, HOME) is not None


@given(st.sampled_from(VIRTUAL_TREES), st.text("abc/", max_size=12))
def test_nothing_inside_a_virtual_filesystem_is_accepted(tree, below):
    path = f"{tree}/{below}"
    assert workdir_refusal(path, "/home/ada/elsewhere", HOME) is not None
