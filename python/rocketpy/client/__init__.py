"""Client internals shared by producers and consumers (RocketMQ's ``MQClientInstance``)."""
