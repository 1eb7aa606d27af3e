"""One field table per protocol. PROTOCOLS lists them in registration order."""
from .blank import PROTOCOL as BLANK
from .enet import PROTOCOL as ENET
from .iceball import PROTOCOL as ICEBALL
from .websocket import PROTOCOL as WEBSOCKET
from .freeblox import PROTOCOL as FREEBLOX
from .rutentoy import PROTOCOL as RUTENTOY

PROTOCOLS = [BLANK, ENET, ICEBALL, WEBSOCKET, FREEBLOX, RUTENTOY]
