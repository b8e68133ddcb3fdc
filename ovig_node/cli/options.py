"""Options that more than one command takes, each under one name everywhere, and the option class that keeps an
earlier release's spelling working."""

from __future__ import annotations

from typing import Any

import click

from ovig_node.node_cli import FOLDER
from ovig_node.verify.defaults import CALIBRATION


class Renamed(click.Option):
    """An option under its one name in every command; the spellings after the first (an earlier release's) still
    work, for one release, and are shown nowhere."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        spellings, self.opts = self.opts, self.opts[:1]
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = spellings


# The devnet folder has one name on every command (the nodes' and the API's too): --devnet-dir.
data_dir_option = click.option(
    "--devnet-dir",
    "--data-dir",
    "data_dir",
    cls=Renamed,
    type=FOLDER,
    envvar="OVIG_DEVNET_DIR",
    default=None,
    help="Devnet data folder [env OVIG_DEVNET_DIR; default ~/.ovig/devnet].",
)


def _config_option(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs; a value is JSON where it parses (3, 0.5, true, "x"), else a string."""
    import json

    config: dict[str, Any] = {}
    for item in values:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{item!r}: give KEY=VALUE", param_hint="--config")
        try:
            config[key.strip()] = json.loads(text)
        except ValueError:
            config[key.strip()] = text
    return config


# The workload's recipe, changed for one task (`spec new`) or one evaluation (`eval`).
config_option = click.option(
    "--config",
    multiple=True,
    metavar="KEY=VALUE",
    callback=_config_option,
    help="Change or add a workload config key (repeatable), e.g. pool=avg for vision.",
)

warmup_option = click.option(
    "--warmup-steps",
    type=click.IntRange(min=0),
    default=None,
    help="Warm the learning rate up linearly over this many steps (0: none) [default: the workload's recipe].",
)

# The boundary's calibration (`calibrate`, and `eval`'s own calibrations).
alpha_option = click.option(
    "--alpha", type=float, default=CALIBRATION.alpha, show_default=True, help="Margin over the largest drift."
)

floor_option = click.option(
    "--floor-ulps",
    type=click.FloatRange(min=0.0, max=CALIBRATION.max_floor_ulps),
    default=CALIBRATION.floor_ulps,
    show_default=True,
    help="Rounding-scale floor: no limit below this many ulps of the claimed values at its percentile (0: none).",
)
