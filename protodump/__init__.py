"""protodump: a Wireshark-style dissector for the network protocols of small open-source voxel games."""
__version__ = "0.1.0"
