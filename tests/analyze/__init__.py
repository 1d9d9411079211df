"""From timelines to a diagnosis: verdicts, findings across rules, advice and its gains, the
workload's facts."""
