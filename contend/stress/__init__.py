"""`contend stress`: worker processes, the servers of a run, faults, and the recorded history."""
