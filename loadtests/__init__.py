"""The locustfiles: `locust -f loadtests/` runs them all; installed, they are `contend.loadtests`."""
