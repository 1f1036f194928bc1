"""measure(), the one timer, schedules and child-process isolation; one sweep run and one io cell on top of them."""
