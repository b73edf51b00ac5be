"""An experiment as a user adds one: this module is all it takes (in dclab/experiments/ it
would be found by itself; here the test registers it). Short downloads: one client fetches
``objects`` objects of ``size`` bytes over ``connections`` connections through the DC
bearer; the headline metric is the completion time."""

from __future__ import annotations

from pydantic import Field

from dclab.endpoints.base import Workload
from dclab.experiments.base import Experiment, FlowResult, Metric, RepResult, Size, StackOptions
from dclab.flowplan import Flow, FlowPlan, single_bearer_plan
from dclab.scenario import Scenario
from dclab.testbed import Bed, stats_ms


class ShortOptions(StackOptions):
    size: Size = Field(100_000, description="Bytes of each object.", json_schema_extra={"show": "100KB"})
    objects: int = Field(4, ge=1, le=100, description="Objects to fetch.")
    connections: int = Field(1, ge=1, le=8, description="Connections to fetch them over (round-robin).")
    sequential: bool = Field(False, description="One object after another on each connection (default: all at once).")


class ShortDownloads(Experiment[ShortOptions]):
    name = "short"
    help = "Short downloads: completion time of a few objects over one or more connections."
    options_model = ShortOptions
    metrics = (Metric("completion_s", "completion time", "s", 3),)

    def plan(self, scenario: Scenario, options: ShortOptions) -> FlowPlan:
        w = Workload(objects=(options.size,) * options.objects, connections=options.connections,
                     streams="sequential" if options.sequential else "parallel")
        return single_bearer_plan(scenario, [Flow("client", options.stack, "dc", w, options.cc)])

    def measure(self, bed: Bed, scenario: Scenario, plan: FlowPlan, options: ShortOptions, result: RepResult) -> RepResult:
        r = bed.run_clients(timeout_s=60)["client"]
        bed.finish()
        result.ok, result.error = r.ok, r.error
        result.metrics = {"completion_s": r.completion_s}
        result.flows = [FlowResult.of(plan, "client", r)]
        result.t0_ms = stats_ms(bed, r.request_wall)  # the request on dcemu's stats clock
        return result


EXPERIMENT = ShortDownloads()
