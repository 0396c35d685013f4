"""`python -m ralphctl` is the `ralphctl` command."""

from ralphctl.cli.app import main

main()
