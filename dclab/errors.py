"""The family of errors for input dclab refuses before anything starts. Each names what
was wrong (the option, the file and key, the field) and what is allowed; the CLI turns any
of them into one usage line. One subclass per source:

- ``scenario.ScenarioError``: a scenario's fields (links, PDCP, the emulator's view of them);
- ``campaign.plan.CampaignFileError``: a campaign file (its keys, groups, sweeps, options);
- ``OptionError``: a command-line option, or options that exclude each other;
- ``TraceError``: a bandwidth trace or a trace to cut;
- ``files.FileRefused``: a file that is not a regular file within bounds, or a bad name;
- ``flows.PlanError`` and ``endpoints.base.StackError``: a flow plan, or what a stack cannot run.
"""

from __future__ import annotations


class InputError(ValueError):
    """Input refused before anything started; the message names the field and the allowed range."""


class OptionError(InputError):
    """A command-line option's value, or options that cannot go together."""


class TraceError(InputError):
    """A bandwidth trace (a file of delivery opportunities) that cannot be used."""


__all__ = ["InputError", "OptionError", "TraceError"]
