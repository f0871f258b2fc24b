"""Real Kafka clusters on 127.0.0.1: jars, brokers, faults, observation (``hwcheck reproduce``)."""
