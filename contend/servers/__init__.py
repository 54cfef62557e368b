"""Where a run's keys go: the redis-server binary, embedded servers, the target and its keyspace."""
