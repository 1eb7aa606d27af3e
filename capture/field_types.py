"""The type tshark 4.0 registers for each standard field whose table (capture/fields.py) keeps a simpler one: an
address or a time as the text tshark prints, a frame reference as a number, a 24-bit OUI in 32 bits. What -G
fields (cli/glossary_cmd.py), the display filters' errors and kinds (analysis/filter_fields.py) and the `_raw`
arrays' type member (output/json_forms.py) name. Measured with `tshark -G fields`."""
from __future__ import annotations

TSHARK_TYPES = {abbrev: ft for ft, abbrevs in {
    "FT_ABSOLUTE_TIME": ("frame.time",),
    "FT_RELATIVE_TIME": ("frame.offset_shift", "frame.time_epoch", "frame.time_delta", "frame.time_delta_displayed",
                         "frame.time_relative", "udp.time_relative", "udp.time_delta", "tcp.time_relative",
                         "tcp.time_delta", "tcp.analysis.ack_rtt", "tcp.analysis.initial_rtt", "tcp.analysis.rto",
                         "http.time"),
    "FT_ETHER": ("eth.dst", "eth.src", "eth.addr", "arp.src.hw_mac", "arp.dst.hw_mac", "sll.src.eth",
                 "ipv6.src_slaac_mac", "ipv6.dst_slaac_mac", "ipv6.slaac_mac"),
    "FT_UINT24": ("eth.addr.oui", "eth.dst.oui", "eth.src.oui"),
    "FT_IPv4": ("arp.src.proto_ipv4", "arp.dst.proto_ipv4", "sll.src.ipv4", "ip.rec_rt", "ip.empty_rt",
                "ip.opt.time_stamp_addr", "ip.src", "ip.dst", "ip.addr", "tcp.options.mptcp.ipv4"),
    "FT_IPv6": ("ipv6.src", "ipv6.dst", "ipv6.addr", "ipv6.routing.src.addr", "ipv6.routing.mipv6.home_address",
                "ipv6.routing.srh.addr", "tcp.options.mptcp.ipv6", "icmpv6.nd.ns.target_address",
                "icmpv6.nd.na.target_address", "icmpv6.opt.prefix", "icmpv6.mldr.mar.multicast_address",
                "icmpv6.mldr.mar.source_address"),
    "FT_BOOLEAN": ("vlan.dei",),
    "FT_FRAMENUM": ("tcp.analysis.acks_frame", "tcp.analysis.rto_frame", "tcp.analysis.duplicate_ack_frame",
                    "tcp.segment", "tcp.segment.error", "tcp.reassembled_in", "icmp.resp_to", "icmpv6.resp_to",
                    "icmp.resp_in", "icmpv6.resp_in", "sctp.fragment", "sctp.reassembled_in", "websocket.fragment",
                    "http.request_in", "http.response_in", "ip.fragment", "ip.reassembled_in", "ipv6.fragment",
                    "ipv6.reassembled.in"),
    "FT_BYTES": ("icmpv6.opt.linkaddr", "icmpv6.opt.src_linkaddr", "icmpv6.opt.target_linkaddr"),
    "FT_STRING": ("http.file_data",)}.items() for abbrev in abbrevs}

# enum ftenum (epan/ftypes/ftypes.h), the last member of a field's `_raw` array
TSHARK_FTENUM = {"FT_BOOLEAN": 2, "FT_UINT24": 6, "FT_ABSOLUTE_TIME": 24, "FT_RELATIVE_TIME": 25, "FT_STRING": 26,
          "FT_ETHER": 29, "FT_BYTES": 30, "FT_IPv4": 32, "FT_IPv6": 33, "FT_FRAMENUM": 35}
