"""``python -m benches.grpc``: the 5.x clients' gRPC path next to the 4.x remoting path on one
broker (see :mod:`benches.grpc.run`)."""
