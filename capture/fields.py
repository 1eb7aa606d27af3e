"""The standard layers' fields, registered once, with tshark's own abbrevs and names (tshark 4.0 -V / -T json).

engine.tree has no ether/IPv4/IPv6 field types, so addresses are "string" fields holding the text tshark prints.
"""
from __future__ import annotations

from ..engine.tree import FieldInfo as F

ETHERTYPES = {0x0800: "IPv4", 0x86DD: "IPv6", 0x0806: "ARP", 0x8100: "802.1Q Virtual LAN",
              0x88A8: "802.1ad Provider Bridge (Q-in-Q)", 0x9100: "QinQ: old non-standard 802.1ad"}
IP_PROTOS = {0: "IPv6 Hop-by-Hop Option", 1: "ICMP", 2: "IGMP", 6: "TCP", 17: "UDP", 41: "IPv6",
             43: "Routing Header for IPv6", 44: "Fragment Header for IPv6", 47: "GRE", 50: "ESP", 51: "AH",
             58: "ICMPv6", 59: "No Next Header for IPv6", 60: "Destination Options for IPv6", 132: "SCTP"}
NULL_FAMILIES = {2: "IP", 24: "IPv6", 28: "IPv6", 30: "IPv6"}
SLL_PKTTYPES = {0: "Unicast to us", 1: "Broadcast", 2: "Multicast", 3: "Unicast to another host",
                4: "Sent by us"}
ARPHRD = {1: "Ethernet", 772: "Loopback", 776: "IPv6-in-IPv4", 65534: "None"}

# frame
frame = F("frame", "Frame", "protocol")
frame_encap = F("frame.encap_type", "Encapsulation type", "int16")
frame_time = F("frame.time", "Arrival Time", "string")
frame_offset_shift = F("frame.offset_shift", "Time shift for this packet", "string")
frame_time_epoch = F("frame.time_epoch", "Epoch Time", "string")
frame_time_delta = F("frame.time_delta", "Time delta from previous captured frame", "string")
frame_time_delta_displayed = F("frame.time_delta_displayed", "Time delta from previous displayed frame", "string")
frame_time_relative = F("frame.time_relative", "Time since reference or first frame", "string")
frame_marked = F("frame.marked", "Frame is marked", "bool")
frame_ignored = F("frame.ignored", "Frame is ignored", "bool")
frame_number = F("frame.number", "Frame Number", "uint32")
frame_len = F("frame.len", "Frame Length", "uint32")
frame_cap_len = F("frame.cap_len", "Capture Length", "uint32")
frame_interface = F("frame.interface_id", "Interface id", "uint32")
frame_section_number = F("frame.section_number", "Section number", "uint32")
frame_interface_name = F("frame.interface_name", "Interface name", "string")
frame_interface_description = F("frame.interface_description", "Interface description", "string")
pkt_comment = F("pkt_comment", "Packet comments", "protocol")
frame_comment = F("frame.comment", "Comment", "string")
frame_packet_flags = F("frame.packet_flags", "Packet flags", "uint32", "HEX")
# epb_flags bits: (field, mask, values or None for a number, True for Set/Not set)
PACKET_FLAG_BITS = [
    (F("frame.packet_flags_direction", "Direction", "uint32", "HEX", mask=0x3), 0x3,
     {0: "Information not available", 1: "Inbound", 2: "Outbound"}),
    (F("frame.packet_flags_reception_type", "Reception type", "uint32", mask=0x1C), 0x1C,
     {0: "Not specified", 1: "Unicast", 2: "Multicast", 3: "Broadcast", 4: "Promiscuous"}),
    (F("frame.packet_flags_fcs_length", "FCS length", "uint32", mask=0x1E0), 0x1E0, None),
    (F("frame.packet_flags_reserved", "Reserved", "uint32", mask=0xFE00), 0xFE00, None),
    *((F(f"frame.packet_flags_{a}", n, "bool", mask=m, bits=32), m, True) for a, n, m in (
        ("crc_error", "CRC error", 0x01000000), ("packet_too_error", "Packet too long error", 0x02000000),
        ("packet_too_short_error", "Packet too short error", 0x04000000),
        ("wrong_inter_frame_gap_error", "Wrong interframe gap error", 0x08000000),
        ("unaligned_frame_error", "Unaligned frame error", 0x10000000),
        ("start_frame_delimiter_error", "Start frame delimiter error", 0x20000000),
        ("preamble_error", "Preamble error", 0x40000000), ("symbol_error", "Symbol error", 0x80000000)))]
frame_p2p_dir = F("frame.p2p_dir", "Point-to-Point Direction", "int8", values={0: "Sent", 1: "Received"})
frame_protocols = F("frame.protocols", "Protocols in frame", "string")

# Ethernet and 802.1Q
eth = F("eth", "Ethernet II", "protocol")
eth_dst = F("eth.dst", "Destination", "string")
eth_src = F("eth.src", "Source", "string")
eth_addr = F("eth.addr", "Address", "string")
eth_addr_resolved = F("eth.addr_resolved", "Address (resolved)", "string")
eth_addr_oui = F("eth.addr.oui", "Address OUI", "uint32")
eth_addr_oui_resolved = F("eth.addr.oui_resolved", "Address OUI (resolved)", "string")
eth_lg = F("eth.lg", "LG bit", "bool", mask=0x020000, bits=24)
arp = F("arp", "Address Resolution Protocol", "protocol")
arp_hw_type = F("arp.hw.type", "Hardware type", "uint16")
arp_proto_type = F("arp.proto.type", "Protocol type", "uint16", "HEX")
arp_hw_size = F("arp.hw.size", "Hardware size", "uint8")
arp_proto_size = F("arp.proto.size", "Protocol size", "uint8")
arp_opcode = F("arp.opcode", "Opcode", "uint16")
arp_isgratuitous = F("arp.isgratuitous", "Is gratuitous", "bool")
arp_isprobe = F("arp.isprobe", "Is probe", "bool")
arp_isannouncement = F("arp.isannouncement", "Is announcement", "bool")
arp_src_hw_mac = F("arp.src.hw_mac", "Sender MAC address", "string")
arp_src_proto_ipv4 = F("arp.src.proto_ipv4", "Sender IP address", "string")
arp_dst_hw_mac = F("arp.dst.hw_mac", "Target MAC address", "string")
arp_dst_proto_ipv4 = F("arp.dst.proto_ipv4", "Target IP address", "string")
eth_padding = F("eth.padding", "Padding", "bytes")
eth_trailer = F("eth.trailer", "Trailer", "bytes")
eth_fcs = F("eth.fcs", "Frame check sequence", "uint32", "HEX")
eth_fcs_status = F("eth.fcs.status", "FCS Status", "uint8")
eth_ig = F("eth.ig", "IG bit", "bool", mask=0x010000, bits=24)
# per address: (the address, resolved, OUI, OUI resolved, LG bit, IG bit)
eth_dst_fields = (eth_dst, F("eth.dst_resolved", "Destination (resolved)", "string"),
                  F("eth.dst.oui", "Destination OUI", "uint32"),
                  F("eth.dst.oui_resolved", "Destination OUI (resolved)", "string"),
                  F("eth.dst.lg", "LG bit", "bool", mask=0x020000, bits=24),
                  F("eth.dst.ig", "IG bit", "bool", mask=0x010000, bits=24))
eth_src_fields = (eth_src, F("eth.src_resolved", "Source (resolved)", "string"),
                  F("eth.src.oui", "Source OUI", "uint32"),
                  F("eth.src.oui_resolved", "Source OUI (resolved)", "string"),
                  F("eth.src.lg", "LG bit", "bool", mask=0x020000, bits=24),
                  F("eth.src.ig", "IG bit", "bool", mask=0x010000, bits=24))
eth_type = F("eth.type", "Type", "uint16", "HEX", ETHERTYPES)
eth_len = F("eth.len", "Length", "uint16")
vlan = F("vlan", "802.1Q Virtual LAN", "protocol")
vlan_priority = F("vlan.priority", "Priority", "uint16", mask=0xE000)
vlan_dei = F("vlan.dei", "DEI", "uint16", mask=0x1000)
vlan_id = F("vlan.id", "ID", "uint16", mask=0x0FFF)
vlan_etype = F("vlan.etype", "Type", "uint16", "HEX", ETHERTYPES)
ieee8021ad = F("ieee8021ad", "IEEE 802.1ad", "protocol")
ieee8021ad_priority = F("ieee8021ad.priority", "Priority", "uint16", mask=0xE000)
ieee8021ad_dei = F("ieee8021ad.dei", "DEI", "uint16", mask=0x1000)
ieee8021ad_id = F("ieee8021ad.id", "ID", "uint16", mask=0x0FFF)
ieee8021ah_etype = F("ieee8021ah.etype", "Type", "uint16", "HEX", ETHERTYPES)  # sic: tshark 4.0's abbrev

# Linux cooked (v1 and v2 share tshark's "sll" abbrevs)
sll = F("sll", "Linux cooked capture v1", "protocol")
sll2 = F("sll", "Linux cooked capture v2", "protocol")
sll_pkttype = F("sll.pkttype", "Packet type", "uint16", values=SLL_PKTTYPES)
sll_hatype = F("sll.hatype", "Link-layer address type", "uint16", values=ARPHRD)
sll_halen = F("sll.halen", "Link-layer address length", "uint16")
sll_src_eth = F("sll.src.eth", "Source", "string")
sll_src_ipv4 = F("sll.src.ipv4", "Source", "string")
sll_src_other = F("sll.src.other", "Source", "bytes")
sll_unused = F("sll.unused", "Unused", "bytes")
sll_etype = F("sll.etype", "Protocol", "uint16", "HEX", ETHERTYPES)
sll_ifindex = F("sll.ifindex", "Interface index", "uint32")

# Null/Loopback and raw IP
null = F("null", "Null/Loopback", "protocol")
null_family = F("null.family", "Family", "uint32", values=NULL_FAMILIES)
raw = F("raw", "Raw packet data", "protocol")

# IPv4
ip = F("ip", "Internet Protocol Version 4", "protocol")
ip_version = F("ip.version", "Version", "uint8", mask=0xF0)
ip_hdr_len = F("ip.hdr_len", "Header Length", "uint8", mask=0x0F)
ip_dsfield = F("ip.dsfield", "Differentiated Services Field", "uint8", "HEX")
ip_dscp = F("ip.dsfield.dscp", "Differentiated Services Codepoint", "uint8", mask=0xFC)
# IPv4 options (capture/layers/ipopt.py)
ip_option_eol = F("ip.options.eol", "End of Options List (EOL)", "bytes")
ip_option_nop = F("ip.options.nop", "No Operation (NOP)", "bytes")
ip_option_record_route = F("ip.options.record_route", "Record Route", "bytes")
ip_option_timestamp = F("ip.options.timestamp", "Time Stamp", "bytes")
ip_option_routeralert = F("ip.options.routeralert", "Router Alert", "bytes")
ip_opt_type = F("ip.opt.type", "Type", "uint8")
ip_opt_type_copy = F("ip.opt.type.copy", "Copy on fragmentation", "bool", mask=0x80, bits=8)
ip_opt_type_class = F("ip.opt.type.class", "Class", "uint8", mask=0x60)
ip_opt_type_number = F("ip.opt.type.number", "Number", "uint8", mask=0x1F)
ip_opt_len = F("ip.opt.len", "Length", "uint8")
ip_opt_ptr = F("ip.opt.ptr", "Pointer", "uint8")
ip_opt_ra = F("ip.opt.ra", "Router Alert", "uint16")
ip_rec_rt = F("ip.rec_rt", "Recorded Route", "string")
ip_rec_rt_host = F("ip.rec_rt_host", "Recorded Route Host", "string")
ip_empty_rt = F("ip.empty_rt", "Empty Route", "string")
ip_empty_rt_host = F("ip.empty_rt_host", "Empty Route Host", "string")
ip_opt_overflow = F("ip.opt.overflow", "Overflow", "uint8", mask=0xF0)
ip_opt_flag = F("ip.opt.flag", "Flag", "uint8", "HEX", mask=0x0F)
ip_opt_time_stamp = F("ip.opt.time_stamp", "Time stamp", "uint32")
ip_opt_time_stamp_addr = F("ip.opt.time_stamp_addr", "Address", "string")
ip_ecn = F("ip.dsfield.ecn", "Explicit Congestion Notification", "uint8", mask=0x03)
ip_len = F("ip.len", "Total Length", "uint16")
ip_id = F("ip.id", "Identification", "uint16", "HEX_DEC")
ip_flags = F("ip.flags", "Flags", "uint8", "HEX", mask=0xE0)
ip_flags_rb = F("ip.flags.rb", "Reserved bit", "bool", mask=0x80, bits=8)
ip_flags_df = F("ip.flags.df", "Don't fragment", "bool", mask=0x40, bits=8)
ip_flags_mf = F("ip.flags.mf", "More fragments", "bool", mask=0x20, bits=8)
ip_frag_offset = F("ip.frag_offset", "Fragment Offset", "uint16", mask=0x1FFF)
ip_ttl = F("ip.ttl", "Time to Live", "uint8")
ip_proto = F("ip.proto", "Protocol", "uint8", values=IP_PROTOS)
ip_checksum = F("ip.checksum", "Header Checksum", "uint16", "HEX")
ip_checksum_status = F("ip.checksum.status", "Header checksum status", "uint8")
ip_options = F("ip.options", "Options", "bytes")
# a datagram reassembled from fragments (reassembly/ip_fragments.py), in the frame that completed it, and (-2) in
# each fragment before: (fragments, fragment, count, length, data, reassembled in), IPv4's and IPv6's (tshark's
# names differ: ip.reassembled_in, ipv6.reassembled.in)
ip_reassembly = (F("ip.fragments", "IPv4 Fragments", "bytes"), F("ip.fragment", "IPv4 Fragment", "uint32"),
                 F("ip.fragment.count", "Fragment count", "uint32"),
                 F("ip.reassembled.length", "Reassembled IPv4 length", "uint32"),
                 F("ip.reassembled.data", "Reassembled IPv4 data", "bytes"),
                 F("ip.reassembled_in", "Reassembled IPv4 in frame", "uint32"))
ipv6_reassembly = (F("ipv6.fragments", "IPv6 Fragments", "none"), F("ipv6.fragment", "IPv6 Fragment", "uint32"),
                   F("ipv6.fragment.count", "Fragment count", "uint32"),
                   F("ipv6.reassembled.length", "Reassembled IPv6 length", "uint32"),
                   F("ipv6.reassembled.data", "Reassembled IPv6 data", "bytes"),
                   F("ipv6.reassembled.in", "Reassembled IPv6 in frame", "uint32"))
ip_src = F("ip.src", "Source Address", "string")
ip_dst = F("ip.dst", "Destination Address", "string")
ip_addr = F("ip.addr", "Source or Destination Address", "string")
# (source, destination, either, source host, destination host, either host)
ip_addresses = (ip_src, ip_dst, ip_addr, F("ip.src_host", "Source Host", "string"),
                F("ip.dst_host", "Destination Host", "string"), F("ip.host", "Source or Destination Host", "string"))

# IPv6
ipv6 = F("ipv6", "Internet Protocol Version 6", "protocol")
ipv6_version = F("ipv6.version", "Version", "uint8", mask=0xF0)
ipv6_tclass = F("ipv6.tclass", "Traffic Class", "uint32", "HEX", mask=0x0FF00000)
ipv6_flow = F("ipv6.flow", "Flow Label", "uint24", "HEX", mask=0x0FFFFF)
ipv6_dscp = F("ipv6.tclass.dscp", "Differentiated Services Codepoint", "uint32", mask=0x0FC00000)
ipv6_ecn = F("ipv6.tclass.ecn", "Explicit Congestion Notification", "uint32", mask=0x00300000)
# packet-ipv6.c registers its own "ip.version" (hf_ip_version, mask 0xF0) for a hidden item beside ipv6.version
ipv6_ip_version = F("ip.version", "Version", "uint8", mask=0xF0)
ipv6_plen = F("ipv6.plen", "Payload Length", "uint16")
ipv6_nxt = F("ipv6.nxt", "Next Header", "uint8", values=IP_PROTOS)
ipv6_hlim = F("ipv6.hlim", "Hop Limit", "uint8")
ipv6_src = F("ipv6.src", "Source Address", "string")
ipv6_dst = F("ipv6.dst", "Destination Address", "string")
ipv6_addr = F("ipv6.addr", "Source or Destination Address", "string")
# the MAC address a SLAAC (EUI-64) interface identifier holds: source's, destination's, either (hidden)
ipv6_slaac_macs = (F("ipv6.src_slaac_mac", "Source SLAAC MAC", "string"),
                   F("ipv6.dst_slaac_mac", "Destination SLAAC MAC", "string"),
                   F("ipv6.slaac_mac", "SLAAC MAC", "string"))
ipv6_addresses = (ipv6_src, ipv6_dst, ipv6_addr, F("ipv6.src_host", "Source Host", "string"),
                  F("ipv6.dst_host", "Destination Host", "string"),
                  F("ipv6.host", "Source or Destination Host", "string"))
ipv6_ext = {0: F("ipv6.hopopts", "IPv6 Hop-by-Hop Option", "protocol"),
            43: F("ipv6.routing", "Routing Header for IPv6", "protocol"),
            60: F("ipv6.dstopts", "Destination Options for IPv6", "protocol"),
            44: F("ipv6.fraghdr", "Fragment Header for IPv6", "protocol"),
            51: F("ah", "Authentication Header", "protocol")}
# per extension header: (next header, length, length in bytes) fields, tshark's names
ipv6_ext_fields = {kind: (F(f"{p}.nxt", "Next Header", "uint8", values=IP_PROTOS), F(f"{p}.len", "Length", "uint8"),
                          F(f"{p}.len_oct", "Length", "uint16"))
                   for kind, p in ((0, "ipv6.hopopts"), (43, "ipv6.routing"), (60, "ipv6.dstopts"))}
ipv6_routing_type = F("ipv6.routing.type", "Type", "uint8")
ipv6_routing_segleft = F("ipv6.routing.segleft", "Segments Left", "uint8")
ipv6_routing_src_reserved = F("ipv6.routing.src.reserved", "Reserved", "bytes")
ipv6_routing_src_addr = F("ipv6.routing.src.addr", "Address", "string")
ipv6_routing_mipv6_reserved = F("ipv6.routing.mipv6.reserved", "Reserved", "bytes")
ipv6_routing_mipv6_home_address = F("ipv6.routing.mipv6.home_address", "Home Address", "string")
ipv6_routing_srh_last_entry = F("ipv6.routing.srh.last_entry", "Last Entry", "uint8")
ipv6_routing_srh_flags = F("ipv6.routing.srh.flags", "Flags", "uint8", "HEX")
ipv6_routing_srh_tag = F("ipv6.routing.srh.tag", "Tag", "bytes")
ipv6_routing_srh_addr = F("ipv6.routing.srh.addr", "Address", "string")
ipv6_ext_fields[51] = (F("ah.next_header", "Next header", "uint8", values=IP_PROTOS), F("ah.length", "Length", "uint8"),
                       F("ah.length_oct", "Length", "uint16"))
ipv6_fraghdr_nxt = F("ipv6.fraghdr.nxt", "Next header", "uint8", values=IP_PROTOS)
ipv6_fraghdr_offset = F("ipv6.fraghdr.offset", "Offset", "uint16", mask=0xFFF8)
ipv6_fraghdr_more = F("ipv6.fraghdr.more", "More Fragments", "bool", mask=0x0001, bits=16)
ipv6_fraghdr_reserved_octet = F("ipv6.fraghdr.reserved_octet", "Reserved octet", "uint8", "HEX")
ipv6_fraghdr_reserved_bits = F("ipv6.fraghdr.reserved_bits", "Reserved bits", "uint16", mask=0x0006)
ipv6_opt = F("ipv6.opt", "IPv6 Option", "none")
ipv6_opt_type = F("ipv6.opt.type", "Type", "uint8", "HEX")
ipv6_opt_action = F("ipv6.opt.type.action", "Action", "uint8", mask=0xC0)
ipv6_opt_change = F("ipv6.opt.type.change", "May Change", "bool", mask=0x20, bits=8)
ipv6_opt_rest = F("ipv6.opt.type.rest", "Low-Order Bits", "uint8", "HEX", mask=0x1F)
ipv6_opt_length = F("ipv6.opt.length", "Length", "uint8")
ipv6_opt_pad1 = F("ipv6.opt.pad1", "Pad1", "none")
ipv6_opt_padn = F("ipv6.opt.padn", "PadN", "bytes")
ipv6_opt_unknown = F("ipv6.opt.unknown", "Unknown Option Payload", "bytes")
ipv6_opt_router_alert = F("ipv6.opt.router_alert", "Router Alert", "uint16",
                          values={0: "MLD", 1: "RSVP", 2: "Active Networks"})
ipv6_opt_experimental = F("ipv6.opt.experimental", "Experimental Option", "bytes")
# tshark's top-level item after an exception ("[Malformed Packet: IPv6 Hop-by-Hop]"); private: the outputs list
# _ws.malformed already
_ws_malformed = F("_ws.malformed", "Malformed Packet", "protocol")
REASSEMBLY_ERROR = "[Reassembly error, protocol TCP: {}]"      # the label of the item TCP's reassembly error hangs on
_ws_short = F("_ws.short", "Packet size limited during capture", "protocol")
ipv6_fraghdr_ident = F("ipv6.fraghdr.ident", "Identification", "uint32", "HEX")

# UDP
udp = F("udp", "User Datagram Protocol", "protocol")
udp_srcport = F("udp.srcport", "Source Port", "uint16")
udp_dstport = F("udp.dstport", "Destination Port", "uint16")
udp_length = F("udp.length", "Length", "uint16")
udp_checksum = F("udp.checksum", "Checksum", "uint16", "HEX")
udp_checksum_status = F("udp.checksum.status", "Checksum Status", "uint8")
udp_payload = F("udp.payload", "Payload", "bytes")
udp_port = F("udp.port", "Source or Destination Port", "uint16")
udp_stream = F("udp.stream", "Stream index", "uint32")
udp_time_relative = F("udp.time_relative", "Time since first frame", "string")
udp_time_delta = F("udp.time_delta", "Time since previous frame", "string")

# TCP
tcp = F("tcp", "Transmission Control Protocol", "protocol")
tcp_srcport = F("tcp.srcport", "Source Port", "uint16")
tcp_dstport = F("tcp.dstport", "Destination Port", "uint16")
tcp_port = F("tcp.port", "Source or Destination Port", "uint16")
tcp_len = F("tcp.len", "TCP Segment Len", "uint32")
tcp_seq_raw = F("tcp.seq_raw", "Sequence Number (raw)", "uint32")
tcp_ack_raw = F("tcp.ack_raw", "Acknowledgment number (raw)", "uint32")
tcp_hdr_len = F("tcp.hdr_len", "Header Length", "uint8", mask=0xF0)
tcp_flags = F("tcp.flags", "Flags", "uint16", "HEX", mask=0x0FFF)
TCP_FLAG_BITS = [  # (field, mask, -V name, tcp.flags.str letter)
    (F("tcp.flags.res", "Reserved", "bool", mask=0xE00, bits=12), 0xE00, "Reserved", "R"),
    (F("tcp.flags.ae", "Accurate ECN", "bool", mask=0x100, bits=12), 0x100, "Accurate ECN", "A"),
    (F("tcp.flags.cwr", "Congestion Window Reduced", "bool", mask=0x80, bits=12), 0x80, "CWR", "C"),
    (F("tcp.flags.ece", "ECN-Echo", "bool", mask=0x40, bits=12), 0x40, "ECE", "E"),
    (F("tcp.flags.urg", "Urgent", "bool", mask=0x20, bits=12), 0x20, "URG", "U"),
    (F("tcp.flags.ack", "Acknowledgment", "bool", mask=0x10, bits=12), 0x10, "ACK", "A"),
    (F("tcp.flags.push", "Push", "bool", mask=0x08, bits=12), 0x08, "PSH", "P"),
    (F("tcp.flags.reset", "Reset", "bool", mask=0x04, bits=12), 0x04, "RST", "R"),
    (F("tcp.flags.syn", "Syn", "bool", mask=0x02, bits=12), 0x02, "SYN", "S"),
    (F("tcp.flags.fin", "Fin", "bool", mask=0x01, bits=12), 0x01, "FIN", "F"),
]
tcp_flags_str = F("tcp.flags.str", "TCP Flags", "string")
tcp_window_size_value = F("tcp.window_size_value", "Window", "uint16")
tcp_checksum = F("tcp.checksum", "Checksum", "uint16", "HEX")
tcp_checksum_status = F("tcp.checksum.status", "Checksum Status", "uint8")
tcp_urgent_pointer = F("tcp.urgent_pointer", "Urgent Pointer", "uint16")
tcp_options = F("tcp.options", "TCP Options", "bytes")
tcp_option_kind = F("tcp.option_kind", "Kind", "uint8")
tcp_option_len = F("tcp.option_len", "Length", "uint8")
tcp_payload = F("tcp.payload", "TCP payload", "bytes")
tcp_pdu_size = F("tcp.pdu.size", "PDU Size", "uint32")
tcp_segment_data = F("tcp.segment_data", "TCP segment data", "bytes")
# conversation state (capture/tcp_analysis.py); relative times are strings holding tshark's "%d.%09d"
tcp_stream = F("tcp.stream", "Stream index", "uint32")
tcp_completeness = F("tcp.completeness", "Conversation completeness", "uint8")
tcp_seq = F("tcp.seq", "Sequence Number", "uint32")
tcp_nxtseq = F("tcp.nxtseq", "Next Sequence Number", "uint32")
tcp_ack = F("tcp.ack", "Acknowledgment Number", "uint32")
tcp_window_size = F("tcp.window_size", "Calculated window size", "uint32")
tcp_window_size_scalefactor = F("tcp.window_size_scalefactor", "Window size scaling factor", "int32")
tcp_mss_val = F("tcp.options.mss_val", "MSS Value", "uint16")
tcp_wscale_shift = F("tcp.options.wscale.shift", "Shift count", "uint8")
tcp_wscale_multiplier = F("tcp.options.wscale.multiplier", "Multiplier", "uint16")
tcp_tsval = F("tcp.options.timestamp.tsval", "Timestamp value", "uint32")
tcp_tsecr = F("tcp.options.timestamp.tsecr", "Timestamp echo reply", "uint32")
tcp_time_relative = F("tcp.time_relative", "Time since first frame in this TCP stream", "string")
tcp_time_delta = F("tcp.time_delta", "Time since previous frame in this TCP stream", "string")
tcp_analysis = F("tcp.analysis", "SEQ/ACK analysis", "none")
tcp_analysis_acks_frame = F("tcp.analysis.acks_frame", "This is an ACK to the segment in frame", "uint32")
tcp_analysis_ack_rtt = F("tcp.analysis.ack_rtt", "The RTT to ACK the segment was", "string")
tcp_analysis_initial_rtt = F("tcp.analysis.initial_rtt", "iRTT", "string")
tcp_analysis_bytes_in_flight = F("tcp.analysis.bytes_in_flight", "Bytes in flight", "uint32")
tcp_analysis_push_bytes_sent = F("tcp.analysis.push_bytes_sent", "Bytes sent since last PSH flag", "uint32")
tcp_analysis_flags = F("tcp.analysis.flags", "TCP Analysis Flags", "none")
tcp_analysis_rto = F("tcp.analysis.rto", "The RTO for this segment was", "string")
tcp_analysis_rto_frame = F("tcp.analysis.rto_frame", "RTO based on delta from frame", "uint32")
tcp_analysis_duplicate_ack = F("tcp.analysis.duplicate_ack", "Duplicate ACK", "none")
tcp_analysis_duplicate_ack_num = F("tcp.analysis.duplicate_ack_num", "Duplicate ACK #", "uint32")
tcp_analysis_duplicate_ack_frame = F("tcp.analysis.duplicate_ack_frame", "Duplicate to the ACK in frame", "uint32")
TCP_OPTIONS = {0: ("tcp.options.eol", "End of Option List (EOL)"), 1: ("tcp.options.nop", "No-Operation (NOP)"),
               2: ("tcp.options.mss", "Maximum segment size"), 3: ("tcp.options.wscale", "Window scale"),
               4: ("tcp.options.sack_perm", "SACK permitted"), 5: ("tcp.options.sack", "SACK"),
               8: ("tcp.options.timestamp", "Timestamps")}
tcp_option = {kind: F(abbrev, name, "bytes") for kind, (abbrev, name) in TCP_OPTIONS.items()}
tcp_option_unknown = F("tcp.options.unknown", "Unknown", "bytes")
tcp_sack_le = F("tcp.options.sack_le", "TCP SACK Left Edge", "uint32")
tcp_sack_re = F("tcp.options.sack_re", "TCP SACK Right Edge", "uint32")
tcp_sack_count = F("tcp.options.sack.count", "TCP SACK Count", "uint8")
tcp_dsack_le = F("tcp.options.sack.dsack_le", "TCP D-SACK Left Edge", "uint32")
tcp_dsack_re = F("tcp.options.sack.dsack_re", "TCP D-SACK Right Edge", "uint32")
tcp_option_unknown_payload = F("tcp.options.unknown.payload", "Payload", "bytes")
# a PDU reassembled from several segments (tshark's top-level "tcp.segments" tree in the completing frame)
tcp_segments = F("tcp.segments", "Reassembled TCP Segments", "none")
tcp_segment = F("tcp.segment", "TCP Segment", "uint32")
tcp_segment_overlap = F("tcp.segment.overlap", "Segment overlap", "bool")
tcp_segment_error = F("tcp.segment.error", "Reassembling error", "uint32")     # a segment with conflicting data
tcp_segment_overlap_conflict = F("tcp.segment.overlap.conflict", "Conflicting data in segment overlap", "bool")
tcp_reassembled_in = F("tcp.reassembled_in", "Reassembled PDU in frame", "uint32")
tcp_segment_count = F("tcp.segment.count", "Segment count", "uint32")
tcp_reassembled_length = F("tcp.reassembled.length", "Reassembled TCP length", "uint32")
tcp_reassembled_data = F("tcp.reassembled.data", "Reassembled TCP Data", "bytes")

# ICMP / ICMPv6 (capture/icmp.py, capture/layers/icmp.py)
icmp = F("icmp", "Internet Control Message Protocol", "protocol")
icmpv6 = F("icmpv6", "Internet Control Message Protocol v6", "protocol")
icmp_unused = F("icmp.unused", "Unused", "bytes")
icmp_mtu = F("icmp.mtu", "MTU of next hop", "uint16")
icmpv6_mtu = F("icmpv6.mtu", "MTU", "uint32")              # a Packet Too Big's
icmpv6_pointer = F("icmpv6.pointer", "Pointer", "uint32")  # a Parameter Problem's
icmpv6_reserved = F("icmpv6.reserved", "Reserved", "bytes")
icmpv6_ns_target = F("icmpv6.nd.ns.target_address", "Target Address", "string")
icmpv6_na_target = F("icmpv6.nd.na.target_address", "Target Address", "string")
icmpv6_na_flag = F("icmpv6.nd.na.flag", "Flags", "uint32", "HEX")
ICMPV6_NA_FLAGS = [(F("icmpv6.nd.na.flag.r", "Router", "bool", mask=1 << 31, bits=32), 1 << 31, "Router"),
                   (F("icmpv6.nd.na.flag.s", "Solicited", "bool", mask=1 << 30, bits=32), 1 << 30, "Solicited"),
                   (F("icmpv6.nd.na.flag.o", "Override", "bool", mask=1 << 29, bits=32), 1 << 29, "Override"),
                   (F("icmpv6.nd.na.flag.rsv", "Reserved", "uint32", mask=0x1FFFFFFF), 0x1FFFFFFF, "Reserved")]
icmpv6_opt = F("icmpv6.opt", "ICMPv6 Option", "none")
icmpv6_ra_cur_hop_limit = F("icmpv6.nd.ra.cur_hop_limit", "Cur hop limit", "uint8")
icmpv6_ra_flag = F("icmpv6.nd.ra.flag", "Flags", "uint8", "HEX")
ICMPV6_RA_FLAGS = [(F("icmpv6.nd.ra.flag.m", "Managed address configuration", "bool", mask=0x80, bits=8), 0x80),
                   (F("icmpv6.nd.ra.flag.o", "Other configuration", "bool", mask=0x40, bits=8), 0x40),
                   (F("icmpv6.nd.ra.flag.h", "Home Agent", "bool", mask=0x20, bits=8), 0x20),
                   (F("icmpv6.nd.ra.flag.prf", "Prf (Default Router Preference)", "uint8", mask=0x18,
                      values={0: "Medium", 1: "High", 2: "Reserved", 3: "Low"}), 0x18),
                   (F("icmpv6.nd.ra.flag.p", "Proxy", "bool", mask=0x04, bits=8), 0x04),
                   (F("icmpv6.nd.ra.flag.rsv", "Reserved", "uint8", mask=0x03), 0x03)]
icmpv6_ra_router_lifetime = F("icmpv6.nd.ra.router_lifetime", "Router lifetime (s)", "uint16")
icmpv6_ra_reachable_time = F("icmpv6.nd.ra.reachable_time", "Reachable time (ms)", "uint32")
icmpv6_ra_retrans_timer = F("icmpv6.nd.ra.retrans_timer", "Retrans timer (ms)", "uint32")
icmpv6_opt_reserved = F("icmpv6.opt.reserved", "Reserved", "none")
icmpv6_opt_mtu = F("icmpv6.opt.mtu", "MTU", "uint32")
icmpv6_opt_nonce = F("icmpv6.opt.nonce", "Nonce", "bytes")     # (RFC 3971; Linux's duplicate address detection)
icmpv6_opt_prefix_length = F("icmpv6.opt.prefix.length", "Prefix Length", "uint8")
icmpv6_opt_prefix_flag = F("icmpv6.opt.prefix.flag", "Flag", "uint8", "HEX")
ICMPV6_PREFIX_FLAGS = [(F("icmpv6.opt.prefix.flag.l", "On-link flag(L)", "bool", mask=0x80, bits=8), 0x80),
                       (F("icmpv6.opt.prefix.flag.a", "Autonomous address-configuration flag(A)", "bool", mask=0x40,
                          bits=8), 0x40),
                       (F("icmpv6.opt.prefix.flag.r", "Router address flag(R)", "bool", mask=0x20, bits=8), 0x20),
                       (F("icmpv6.opt.prefix.flag.reserved", "Reserved", "uint8", mask=0x1F), 0x1F)]
icmpv6_opt_prefix_valid_lifetime = F("icmpv6.opt.prefix.valid_lifetime", "Valid Lifetime", "uint32")
icmpv6_opt_prefix_preferred_lifetime = F("icmpv6.opt.prefix.preferred_lifetime", "Preferred Lifetime", "uint32")
icmpv6_opt_prefix = F("icmpv6.opt.prefix", "Prefix", "string")
icmpv6_opt_type = F("icmpv6.opt.type", "Type", "uint8")
icmpv6_opt_length = F("icmpv6.opt.length", "Length", "uint8")
icmpv6_opt_linkaddr = F("icmpv6.opt.linkaddr", "Link-layer address", "string")
icmpv6_opt_src_linkaddr = F("icmpv6.opt.src_linkaddr", "Source Link-layer address", "string")
icmpv6_opt_target_linkaddr = F("icmpv6.opt.target_linkaddr", "Target Link-layer address", "string")
icmpv6_mldr_nb_mcast_records = F("icmpv6.mldr.nb_mcast_records", "Number of Multicast Address Records", "uint16")
icmpv6_mldr_mar = F("icmpv6.mldr.mar", "Multicast Address Record", "none")
icmpv6_mldr_mar_record_type = F("icmpv6.mldr.mar.record_type", "Record Type", "uint8")
icmpv6_mldr_mar_aux_data_len = F("icmpv6.mldr.mar.aux_data_len", "Aux Data Len", "uint8")
icmpv6_mldr_mar_nb_sources = F("icmpv6.mldr.mar.nb_sources", "Number of Sources", "uint16")
icmpv6_mldr_mar_multicast_address = F("icmpv6.mldr.mar.multicast_address", "Multicast Address", "string")
icmpv6_mldr_mar_source_address = F("icmpv6.mldr.mar.source_address", "Source Address", "string")


def _icmp_fields(p: str) -> dict:
    return {"type": F(f"{p}.type", "Type", "uint8"), "code": F(f"{p}.code", "Code", "uint8"),
            "checksum": F(f"{p}.checksum", "Checksum", "uint16", "HEX"),
            "checksum_status": F(f"{p}.checksum.status", "Checksum Status", "uint8"),
            "ident": F(f"{p}.ident", "Identifier", "uint16") if p == "icmp" else
            F(f"{p}.echo.identifier", "Identifier", "uint16", "HEX"),
            "ident_le": F(f"{p}.ident_le", "Identifier (LE)", "uint16"),
            "seq": F(f"{p}.seq" if p == "icmp" else f"{p}.echo.sequence_number", "Sequence Number", "uint16"),
            "seq_le": F(f"{p}.seq_le", "Sequence Number (LE)", "uint16"),
            "resp_to": F(f"{p}.resp_to", "Request frame", "uint32"),
            "resptime": F(f"{p}.resptime", "Response time", "double"),
            # -2's second pass, on a request: the reply the first pass saw, or none
            "resp_in": F(f"{p}.resp_in", "Response frame" if p == "icmp" else "Response In", "uint32"),
            "no_resp": F(f"{p}.no_resp", "No response seen", "none")}


icmp_fields, icmpv6_fields = _icmp_fields("icmp"), _icmp_fields("icmpv6")
# tshark's data protocol (bytes no dissector claimed)
data = F("data", "Data", "protocol")
data_data = F("data.data", "Data", "bytes")
data_len = F("data.len", "Length", "int32")

# SCTP (capture/sctp.py)
# an sctp item without a label (a DATA chunk's continuation item) prints its name in -V and its abbrev in -T fields
sctp = F("sctp", "Stream Control Transmission Protocol", "protocol",
         labeler=lambda item: "Stream Control Transmission Protocol")
sctp_srcport = F("sctp.srcport", "Source port", "uint16")
sctp_dstport = F("sctp.dstport", "Destination port", "uint16")
sctp_port = F("sctp.port", "Port", "uint16")
sctp_verification_tag = F("sctp.verification_tag", "Verification tag", "uint32", "HEX")
sctp_checksum = F("sctp.checksum", "Checksum", "uint32", "HEX")
sctp_checksum_status = F("sctp.checksum.status", "Checksum Status", "uint8")
sctp_assoc_index = F("sctp.assoc_index", "Association index", "uint16")
sctp_parameter_type = F("sctp.parameter_type", "Parameter type", "uint16", "HEX")
sctp_parameter_bit_1 = F("sctp.parameter_bit_1", "Bit", "bool", mask=0x8000, bits=16)
sctp_parameter_bit_2 = F("sctp.parameter_bit_2", "Bit", "bool", mask=0x4000, bits=16)
sctp_parameter_length = F("sctp.parameter_length", "Parameter length", "uint16")
sctp_parameter_value = F("sctp.parameter_value", "Parameter value", "bytes")
sctp_parameter_state_cookie = F("sctp.parameter_state_cookie", "State cookie", "bytes")
sctp_parameter_padding = F("sctp.parameter_padding", "Parameter padding", "bytes")
sctp_chunk_type = F("sctp.chunk_type", "Chunk type", "uint8")
sctp_chunk_bit_1 = F("sctp.chunk_bit_1", "Bit", "bool", mask=0x80, bits=8)
sctp_chunk_bit_2 = F("sctp.chunk_bit_2", "Bit", "bool", mask=0x40, bits=8)
sctp_chunk_flags = F("sctp.chunk_flags", "Chunk flags", "uint8", "HEX")
sctp_chunk_length = F("sctp.chunk_length", "Chunk length", "uint16")
sctp_chunk_value = F("sctp.chunk_value", "Chunk value", "bytes")
sctp_chunk_padding = F("sctp.chunk_padding", "Chunk padding", "bytes")
sctp_cookie = F("sctp.cookie", "Cookie", "bytes")
sctp_data_i_bit = F("sctp.data_i_bit", "I-Bit", "bool", mask=0x08, bits=8)
sctp_data_u_bit = F("sctp.data_u_bit", "U-Bit", "bool", mask=0x04, bits=8)
sctp_data_b_bit = F("sctp.data_b_bit", "B-Bit", "bool", mask=0x02, bits=8)
sctp_data_e_bit = F("sctp.data_e_bit", "E-Bit", "bool", mask=0x01, bits=8)
sctp_data_tsn = F("sctp.data_tsn", "Transmission sequence number (relative)", "uint32")
sctp_sack_cumulative_tsn_ack = F("sctp.sack_cumulative_tsn_ack", "Cumulative TSN ACK (relative)", "uint32")
sctp_sack_nounce_sum = F("sctp.sack_nounce_sum", "Nounce sum", "uint8", mask=0x01)
sctp_data_tsn_raw = F("sctp.data_tsn_raw", "Transmission sequence number (absolute)", "uint32")
sctp_data_sid = F("sctp.data_sid", "Stream identifier", "uint16", "HEX")
sctp_data_ssn = F("sctp.data_ssn", "Stream sequence number", "uint16")
sctp_data_ppid = F("sctp.data_payload_proto_id", "Payload protocol identifier", "uint32")
sctp_init_fields = [F("sctp.init_initiate_tag", "Initiate tag", "uint32", "HEX"),
                    F("sctp.init_credit", "Advertised receiver window credit (a_rwnd)", "uint32"),
                    F("sctp.init_nr_out_streams", "Number of outbound streams", "uint16"),
                    F("sctp.init_nr_in_streams", "Number of inbound streams", "uint16"),
                    F("sctp.init_initial_tsn", "Initial TSN", "uint32")]
sctp_initack_fields = [F("sctp.initack_initiate_tag", "Initiate tag", "uint32", "HEX"),
                       F("sctp.initack_credit", "Advertised receiver window credit (a_rwnd)", "uint32"),
                       F("sctp.initack_nr_out_streams", "Number of outbound streams", "uint16"),
                       F("sctp.initack_nr_in_streams", "Number of inbound streams", "uint16"),
                       F("sctp.initack_initial_tsn", "Initial TSN", "uint32")]
sctp_fragments = F("sctp.fragments", "Reassembled SCTP Fragments", "none")
sctp_fragment = F("sctp.fragment", "SCTP Fragment", "uint32")
sctp_reassembled_in = F("sctp.reassembled_in", "Reassembled Message in frame", "uint32")
sctp_initiate_tag = F("sctp.initiate_tag", "Initiate tag", "uint32", "HEX")
sctp_sack_cumulative_tsn_ack_raw = F("sctp.sack_cumulative_tsn_ack_raw", "Cumulative TSN ACK (absolute)", "uint32")
sctp_sack_a_rwnd = F("sctp.sack_a_rwnd", "Advertised receiver window credit (a_rwnd)", "uint32")
sctp_sack_gap_blocks = F("sctp.sack_number_of_gap_blocks", "Number of gap acknowledgement blocks", "uint16")
sctp_sack_dup_tsns = F("sctp.sack_number_of_duplicated_tsns", "Number of duplicated TSNs", "uint16")
sctp_shutdown_complete_t_bit = F("sctp.shutdown_complete_t_bit", "T-Bit", "bool", mask=0x01, bits=8)
sctp_abort_t_bit = F("sctp.abort_t_bit", "T-Bit", "bool", mask=0x01, bits=8)
sctp_parameter_heartbeat_information = F("sctp.parameter_heartbeat_information", "Heartbeat information", "bytes")
sctp_shutdown_cumulative_tsn_ack = F("sctp.shutdown_cumulative_tsn_ack", "Cumulative TSN Ack", "uint32")

# TCP conversation experts (capture/layers.py): abbrev -> (group, severity, message); {} = the server port
TCP_EXPERTS = {
    "tcp.connection.syn": ("SEQUENCE", "CHAT", "Connection establish request (SYN): server port {}"),
    "tcp.connection.synack": ("SEQUENCE", "CHAT", "Connection establish acknowledge (SYN+ACK): server port {}"),
    "tcp.connection.fin": ("SEQUENCE", "CHAT", "Connection finish (FIN)"),
    "tcp.connection.rst": ("SEQUENCE", "WARN", "Connection reset (RST)"),
    "tcp.connection.fin_active": ("SEQUENCE", "NOTE", "This frame initiates the connection closing"),
    "tcp.connection.fin_passive": ("SEQUENCE", "NOTE", "This frame undergoes the connection closing"),
    "tcp.analysis.lost_segment": ("SEQUENCE", "WARN", "Previous segment(s) not captured (common at capture start)"),
    "tcp.analysis.out_of_order": ("SEQUENCE", "WARN", "This frame is a (suspected) out-of-order segment"),
    "tcp.analysis.retransmission": ("SEQUENCE", "NOTE", "This frame is a (suspected) retransmission"),
    "tcp.analysis.spurious_retransmission": ("SEQUENCE", "NOTE",
                                             "This frame is a (suspected) spurious retransmission"),
    "tcp.analysis.ack_lost_segment": ("SEQUENCE", "WARN",
                                      "ACKed segment that wasn't captured (common at capture start)"),
    "tcp.analysis.fast_retransmission": ("SEQUENCE", "NOTE", "This frame is a (suspected) fast retransmission"),
    "tcp.analysis.window_update": ("SEQUENCE", "CHAT", "TCP window update"),
    "tcp.analysis.window_full": ("SEQUENCE", "WARN", "TCP window specified by the receiver is now completely full"),
    "tcp.analysis.keep_alive": ("SEQUENCE", "NOTE", "TCP keep-alive segment"),
    "tcp.analysis.keep_alive_ack": ("SEQUENCE", "NOTE", "ACK to a TCP keep-alive segment"),
    "tcp.analysis.duplicate_ack": ("SEQUENCE", "NOTE", "Duplicate ACK (#{})"),
    "tcp.analysis.zero_window_probe": ("SEQUENCE", "NOTE", "TCP Zero Window Probe"),
    "tcp.analysis.zero_window": ("SEQUENCE", "WARN", "TCP Zero Window segment"),
    "tcp.analysis.zero_window_probe_ack": ("SEQUENCE", "NOTE", "ACK to a TCP Zero Window Probe"),
    "tcp.analysis.reused_ports": ("SEQUENCE", "NOTE",
                                  "A new tcp session is started with the same ports as an earlier session in this trace"),
    "tcp.suboption_malformed": ("MALFORMED", "ERROR", "suboption would go past end of option"),
    "tcp.options.sack.dsack": ("SEQUENCE", "WARN", "D-SACK Sequence"),
    "tcp.ack.nonzero": ("PROTOCOL", "NOTE", "The acknowledgment number field is nonzero while the ACK flag is not set"),
    "tcp.short_segment": ("MALFORMED", "WARN", "Short segment. Segment/fragment does not contain a full TCP header "
                                               "(might be NMAP or someone else deliberately sending unusual packets)"),
    # malformed headers and options (tshark 4.0's messages; "{}": the message says which option and why)
    "tcp.bogus_header_length": ("PROTOCOL", "ERROR", "Bogus TCP header length ({}, must be at least 20)"),
    "tcp.option.len.invalid": ("SEQUENCE", "NOTE", "{}"),
    "tcp.options.mss.absent": ("PROTOCOL", "NOTE", "The SYN packet does not contain a MSS option"),
    "tcp.options.mss.present": ("PROTOCOL", "WARN", "The non-SYN packet does contain a MSS option"),
    "tcp.nop": ("PROTOCOL", "WARN", "4 NOP in a row - a router may have removed some options"),
    "tcp.non_zero_bytes_after_eol": ("PROTOCOL", "ERROR", "Non-zero header padding"),
    "tcp.options.wscale.shift.invalid": ("PROTOCOL", "WARN", "Window scale shift exceeds 14"),
}

# Experts: the MALFORMED ones Decoded.bad() uses (abbrev -> description), for registration by outputs.
EXPERTS = {
    "_ws.malformed": "Malformed Packet (a header runs past the length it should fit in)",
    "_ws.short": "Packet size limited during capture",
    "ip.version.bad": "Bogus IP version", "ip.bogus_header_length": "Bogus IP header length",
    "ip.bogus_ip_length": "Bogus IP length", "ip.len.past_end": "IPv4 total length exceeds packet length",
    "ipv6.version.bad": "Bogus IP version", "ipv6.plen_exceeds_framing": "IPv6 payload length too big",
    "udp.length.bad": "Bad UDP length", "udp.checksum.zero": "Illegal checksum value (0)",
    "icmp.checksum_bad": "Bad checksum", "icmpv6.checksum_bad.expert": "Bad checksum",
    "icmp.resp_not_found": "Response not found", "icmpv6.resp_not_found": "Response not found",
    "ip.ttl.lncb": "Time To Live", "ip.ttl.too_small": "Time To Live",
    "_ws.malformed.expert": "Malformed Packet (Exception occurred)", "eth.padding_bad": "Padding was non-zero",
    "_ws.malformed.reassembly": "Reassembly error",
    "frame.comment.expert": "Formatted comment", "eth.src_not_group": "Source MAC must not be a group address",
    **{abbrev: message.replace(": server port {}", "").replace(" (#{})", "") for abbrev, (_, _, message)
       in TCP_EXPERTS.items()},
    "tcp.bogus_header_length": "Bogus TCP header length", "tcp.option.len.invalid": "Invalid length for option",
    "tcp.short_segment": "Short segment",
}

# MPTCP: TCP option kind 30 (capture/layers/mptcp.py) and the "mptcp" protocol's analysis (capture/mptcp_analysis.py)
MPTCP_SUBTYPES = {0: "Multipath Capable", 1: "Join Connection", 2: "Data Sequence Signal", 3: "Add Address",
                  4: "Remove Address", 5: "Change Subflow Priority", 6: "TCP Fallback", 7: "Fast Close",
                  8: "TCP Reset"}
MPTCP_RST_REASONS = {0: "Unspecified error", 1: "MPTCP-specific error", 2: "Lack of resources",
                     3: "Administratively prohibited", 4: "Too much outstanding data", 5: "Unacceptable performance",
                     6: "Middlebox interference"}
mptcp = F("mptcp", "Multipath Transmission Control Protocol", "protocol")
mptcp_subtype = F("tcp.options.mptcp.subtype", "Multipath TCP subtype", "uint8", values=MPTCP_SUBTYPES, mask=0xF0)
mptcp_version = F("tcp.options.mptcp.version", "Multipath TCP version", "uint8", mask=0x0F)
mptcp_reserved = F("tcp.options.mptcp.reserved", "Reserved", "uint16", "HEX", mask=0x0FFF)
mptcp_flags = F("tcp.options.mptcp.flags", "Multipath TCP flags", "uint8", "HEX")
mptcp_backup_flag = F("tcp.options.mptcp.backup.flag", "Backup flag", "uint8", mask=0x01)
mptcp_checksum_flag = F("tcp.options.mptcp.checksumreq.flags", "Checksum required", "uint8", mask=0x80)
mptcp_extensibility_flag = F("tcp.options.mptcp.extensibility.flag", "Extensibility", "uint8", mask=0x40)
mptcp_nomoresubflows_flag = F("tcp.options.mptcp.nomoresubflows.flag",
                              "Do not attempt to establish new subflows to this address and port", "uint8", mask=0x20)
mptcp_sha1_flag = F("tcp.options.mptcp.sha1.flag", "Use HMAC-SHA1", "uint8", mask=0x01)
mptcp_sha256_flag = F("tcp.options.mptcp.sha256.flag", "Use HMAC-SHA256", "uint8", mask=0x01)
mptcp_datafin_flag = F("tcp.options.mptcp.datafin.flag", "DATA_FIN", "uint8", mask=0x10)
mptcp_dseqn8_flag = F("tcp.options.mptcp.dseqn8.flag", "Data Sequence Number is 8 octets", "uint8", mask=0x08)
mptcp_dseqnpresent_flag = F("tcp.options.mptcp.dseqnpresent.flag", "Data Sequence Number, Subflow Sequence Number, "
                            "Data-level Length, Checksum present", "uint8", mask=0x04)
mptcp_dataack8_flag = F("tcp.options.mptcp.dataack8.flag", "Data ACK is 8 octets", "uint8", mask=0x02)
mptcp_dataackpresent_flag = F("tcp.options.mptcp.dataackpresent.flag", "Data ACK is present", "uint8", mask=0x01)
mptcp_reserved_flag = F("tcp.options.mptcp.reserved.flag", "Reserved", "uint8", "HEX", mask=0x1E)
mptcp_reserved_flag_v0 = F("tcp.options.mptcp.reserved.flag", "Reserved", "uint8", "HEX", mask=0x3E)
mptcp_rst_flags = [(F(f"tcp.options.mptcp.flag_{c}.flag", name, "bool", mask=m, bits=4), m, name)
                   for c, name, m in (("U", "Flag U", 8), ("V", "Flag V", 4), ("W", "Flag W", 2),
                                      ("T", "Transient", 1))]
mptcp_rst_reason = F("tcp.options.mptcp.rst_reason", "TCPRST Reason", "uint8", "HEX", values=MPTCP_RST_REASONS)
mptcp_addrid = F("tcp.options.mptcp.addrid", "Address ID", "uint8")
mptcp_sendkey = F("tcp.options.mptcp.sendkey", "Sender's Key", "uint64")
mptcp_recvkey = F("tcp.options.mptcp.recvkey", "Receiver's Key", "uint64")
mptcp_recvtok = F("tcp.options.mptcp.recvtok", "Receiver's Token", "uint32")
mptcp_sendrand = F("tcp.options.mptcp.sendrand", "Sender's Random Number", "uint32")
mptcp_sendtrunchmac = F("tcp.options.mptcp.sendtrunchmac", "Sender's Truncated HMAC", "uint64")
mptcp_sendhmac = F("tcp.options.mptcp.sendhmac", "Sender's HMAC", "bytes")
mptcp_addaddrtrunchmac = F("tcp.options.mptcp.addaddrtrunchmac", "Truncated HMAC", "uint64")
mptcp_rawdataack = F("tcp.options.mptcp.rawdataack", "Original MPTCP Data ACK", "uint64")
mptcp_rawdataseqno = F("tcp.options.mptcp.rawdataseqno", "Data Sequence Number", "uint64")
mptcp_subflowseqno = F("tcp.options.mptcp.subflowseqno", "Subflow Sequence Number", "uint32")
mptcp_datalvllen = F("tcp.options.mptcp.datalvllen", "Data-level Length", "uint16")
mptcp_checksum = F("tcp.options.mptcp.checksum", "Checksum", "uint16", "HEX")
mptcp_ipver = F("tcp.options.mptcp.ipver", "IP version", "uint8", mask=0x0F)
mptcp_echo = F("tcp.options.mptcp.echo", "Echo", "uint8", mask=0x01)
mptcp_ipv4 = F("tcp.options.mptcp.ipv4", "Advertised IPv4 Address", "string")
mptcp_ipv6 = F("tcp.options.mptcp.ipv6", "Advertised IPv6 Address", "string")
mptcp_port = F("tcp.options.mptcp.port", "Advertised port", "uint16")
mptcp_ack = F("mptcp.ack", "Multipath TCP Data ACK", "uint64")
mptcp_dss_dsn = F("mptcp.dss.dsn", "DSS Data Sequence Number", "uint64")
mptcp_expected_idsn = F("mptcp.expected_idsn", "Subflow expected IDSN", "uint64")
mptcp_expected_token = F("mptcp.expected_token", "Subflow token generated from key", "uint32")
mptcp_analysis = F("mptcp.analysis", "MPTCP analysis", "none")
mptcp_analysis_subflows = F("mptcp.analysis.subflows", "TCP subflow stream id(s)", "string")
mptcp_stream = F("mptcp.stream", "Stream index", "uint32")
mptcp_rm_addr_count = F("mptcp.rm_addr.count", "Number of removed addresses", "uint8")
mptcp_master = F("mptcp.master", "Master flow", "bool")
MPTCP_EXPERTS = {
    "mptcp.connection.echoed_key_mismatch": ("PROTOCOL", "WARN", "The echoed key in the ACK of the MPTCP handshake "
                                                                 "does not match the key of the SYN/ACK"),
    "mptcp.connection.missing_algorithm": ("PROTOCOL", "WARN", "No crypto algorithm specified"),
    "mptcp.connection.unsupported_algorithm": ("PROTOCOL", "WARN", "Unsupported algorithm"),
}


# Fields Wireshark 4.0 registers with no bitmask (its dissector draws their bit picture itself): their _raw and PDML
# value are the bytes, as for any unmasked field (output/json_forms.masked). IPv6's hidden ip.version is not one.
PICTURE_ONLY_MASK = frozenset((ip_version, ip_hdr_len, tcp_hdr_len, ipv6_version))
