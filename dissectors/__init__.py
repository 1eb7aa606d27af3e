"""One field table per protocol. PROTOCOLS lists them in registration order."""
from .blank import PROTOCOL as BLANK

PROTOCOLS = [BLANK]
