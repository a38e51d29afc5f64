// Which of this machine's addresses the other ranks can reach it at.
#pragma once
#include <string>

namespace kg::device {

// The local address (numeric, IPv4 or IPv6) this machine sends from to reach `host` (a name or an address): the
// kernel's route, asked by connecting a UDP socket, which sends nothing. "" when `host` does not resolve or no
// route leads there. Gloo's ranks advertise this address to each other: the hostname's address, PyTorch's default,
// is 127.0.0.1 on many machines (/etc/hosts), which a rank on another node cannot reach.
std::string local_address_towards(const std::string& host);

// 127.x.x.x, ::1 or "localhost".
bool is_loopback(const std::string& host);

}  // namespace kg::device
