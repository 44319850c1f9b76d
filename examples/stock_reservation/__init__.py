"""Stock lookup and reservation: an external side effect made safe with an operation key."""
