"""Test harness: start real services (Keystone, Ironic, sushy-tools, Kubernetes)
on 127.0.0.1, each in its own temporary directory, for the integration suites."""
