// Nothing to call: the library sets the test run's width as it loads.
