"""Bytes across the sandbox's boundary (messages, replies, shared inputs, output), read as hostile."""
