"""Consumers: push (listener-driven) consumption with rebalance and committed offsets."""
