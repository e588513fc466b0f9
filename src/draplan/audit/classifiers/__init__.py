"""`why`'s categories as an ordered list of small classifiers, one module each, as the
scheduler's plugins are.

The contract:

- A classifier is an object with a `name` (unique), the `categories` it may answer (each in
  `audit.why.CATEGORIES`) and a `classify` method that returns a `Diagnosis` for the pod, or
  None to pass it to the next classifier. The first answer wins, so the order of the lists
  below is the taxonomy's ranking.
- `CONFIGURATION` classifiers (`base.ConfigClassifier`) judge each pod on the input state,
  before the scheduling pass, from what it asks (`base.Pending`: claims, device count, gang):
  what no capacity changes. A pod they answer NoMatchingDevice is left out of the pass.
- `PLACEMENT` classifiers (`base.Classifier`) judge the pods the configuration ones passed, on
  the state the pass leaves (the pods ahead in the queue placed), through `base.Case`: its
  `view` (what every node says about the pod's shape), `reach` (which node and pool shapes
  could ever host it) and the capacity figures, each worked out when first read. A `shared`
  classifier's answer depends only on the pod's shape and gang: it is asked once per shape
  and gang and its answer given to every pod of them. The last classifier answers every pod.
- A classifier reads the state and may fork it, but leaves it as it found it. A fix it can
  check is given as `proposals` (with `otherwise` for when none works): the auditor tries them
  after every pod is classified, in queue order, each on the state the fixes before it leave
  (audit.fixes), and prints the first that makes the pod schedulable. Advice it cannot check
  is a `fix` dict, printed as not verified. A pod's node selector and affinity are its
  owner's choice: no fix drops them (nodes they exclude are outside the pod's scope).
- `base.Audit` is what a classifier may use: the state, the scheduler (what-if placements in
  forks), the gangs, the pool advisor (with NodePools: the autoscaler's plan, moves made),
  the pods the pass placed, the mover (what-if moves) and the reacher.

A new classifier is a module here with one class, put in its place in a list below.
"""

from __future__ import annotations

from draplan.audit.classifiers.base import Classifier, ConfigClassifier
from draplan.audit.classifiers.domain import Domain
from draplan.audit.classifiers.excluded import Excluded
from draplan.audit.classifiers.exhausted import Exhausted
from draplan.audit.classifiers.fragmented import Fragmented
from draplan.audit.classifiers.gated import Gated
from draplan.audit.classifiers.impossible import Impossible
from draplan.audit.classifiers.incomplete import Incomplete
from draplan.audit.classifiers.invalid import Invalid
from draplan.audit.classifiers.placed import Placed
from draplan.audit.classifiers.podrules import PodRules
from draplan.audit.classifiers.pools import Pools
from draplan.audit.classifiers.preempting import Preempting
from draplan.audit.classifiers.prefiltered import Prefiltered
from draplan.audit.classifiers.scaleup import ScaleUp
from draplan.audit.classifiers.shaped import Shaped
from draplan.audit.classifiers.spreadpolicy import SpreadPolicy
from draplan.audit.classifiers.tainted import Tainted
from draplan.audit.classifiers.timeout import TimedOut
from draplan.audit.classifiers.unclaimed import Unclaimed
from draplan.audit.classifiers.unmatched import Unmatched
from draplan.audit.classifiers.unplaceable import Unplaceable
from draplan.audit.classifiers.unreachable import Unreachable

CONFIGURATION: tuple[ConfigClassifier, ...] = (
    Gated(),  # SchedulingGated: the scheduler never sees the pod
    Unclaimed(),  # NoMatchingDevice: a claim or template is missing
    Unmatched(),  # NoMatchingDevice: no device anywhere serves a request
    Incomplete(),  # GangIncomplete
)
PLACEMENT: tuple[Classifier, ...] = (
    Placed(),  # Schedulable
    Preempting(),  # Schedulable: by evicting pods of lower priority
    ScaleUp(),  # WaitingForScaleUp: the autoscaler adds nodes for it
    SpreadPolicy(),  # TopologySpread: domains only an Ignore node inclusion policy counts
    Excluded(),  # NodeConstraints: taints or cordons keep it off nodes with room
    Tainted(),  # DeviceTaints: only tainted devices would fit it
    PodRules(),  # PodAffinity, TopologySpread, HostPortConflict: rules about other pods
    Impossible(),  # TopologyMismatch: no node or pool shape meets a claim constraint
    Unreachable(),  # NodeConstraints: only excluded nodes or pools could ever hold it
    Pools(),  # PoolLimitReached, NoPoolCanFit
    Invalid(),  # NoMatchingDevice: the claims fail on every node
    Prefiltered(),  # CapacityExhausted: PreFilter rejects the pod
    Exhausted(),  # CapacityExhausted
    Shaped(),  # TopologyMismatch: the free devices are not in the required shape
    Domain(),  # TopologyMismatch: a gang's topology domain
    Fragmented(),  # Fragmentation
    Unplaceable(),  # GangUnplaceable
    TimedOut(),  # Timeout: answers every pod left
)

__all__ = ["CONFIGURATION", "PLACEMENT", "Classifier", "ConfigClassifier"]
