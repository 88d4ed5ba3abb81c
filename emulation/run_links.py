"""``twinnet run --link-rate``: checks before the run (host links, CPU headroom), rates on the cards.

The cards' rate-limited queues carry every card-to-card and card-to-host link at
the link rate; the host-to-card link is the injector's pacing, so a host may not
be asked to send faster than its link (except on lossless links, where the card's
PFC pauses the host instead). The CPU headroom check
(:mod:`emulation.headroom`) refuses a run the machine cannot emulate.
"""

from __future__ import annotations

from emulation.headroom import HeadroomError, check_headroom, mean_cards_per_packet
from emulation.run_settings import RunInputError, RunSettings
from emulation.traffic import Schedule


def check_link_plan(settings: RunSettings, rate_pps: float, schedule: Schedule, all_pairs) -> str:
    """Headroom summary (or warning) of a run at ``settings.link_rate``; RunInputError if it cannot run."""
    link_rate = settings.effective_link_rate()
    if link_rate is None:
        return ""
    if not link_rate > 0:
        raise RunInputError(f"--link-rate must be positive, got {link_rate}")
    if rate_pps > link_rate and not settings.lossless:
        raise RunInputError(
            f"--rate {rate_pps:g} probes/s per host is more than the host link carries (--link-rate "
            f"{link_rate:g} packets/s)"
        )
    duration = schedule.duration or 1.0
    cards = mean_cards_per_packet(all_pairs, schedule.src, schedule.dst)
    try:
        headroom, warning = check_headroom(len(schedule) / duration, cards)
    except HeadroomError as error:
        raise RunInputError(str(error)) from error
    return f"link rate {link_rate:g} packets/s; CPU " + (warning or headroom.summary())


def set_link_rate(plan, network) -> float | None:
    """Rate-limit every card port of a running network to the plan's link rate (nothing without one).

    The rate is ``--link-rate``, else a lossless run's default (PFC needs rated links); it is returned.
    """
    link_rate = plan.settings.effective_link_rate()
    if link_rate is not None:
        network.set_link_rates(link_rate)
    return link_rate
