"""`python -m ovig_node ...` is `ovig ...` (how the demo starts its node processes)."""

from ovig_node.cli import main

main()
