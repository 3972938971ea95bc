// What the kernel says about this process's TCP connections to a port: the
// keep-alive timer of each (column "tr" of /proc/net/tcp{,6}: 2 = keep-alive
// timer pending, which an idle established socket has only with
// SO_KEEPALIVE). Linux only. Thread-safety: reads files; call from tests.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace lockstep::testing {

struct TcpConnection {
  int remotePort = 0;
  int timer = 0;  // 0 none, 1 retransmit, 2 keep-alive, ...
  int state = 0;  // 1 = ESTABLISHED
};

// Established TCP connections of this process whose remote port is `port`.
inline std::vector<TcpConnection> ownConnectionsTo(int port) {
  std::set<std::string> inodes;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) {
      char target[256];
      std::string link = std::string("/proc/self/fd/") + e->d_name;
      ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
      if (n <= 0) continue;
      std::string t(target, static_cast<std::size_t>(n));
      if (t.rfind("socket:[", 0) == 0) inodes.insert(t.substr(8, t.size() - 9));
    }
    closedir(d);
  }
  std::vector<TcpConnection> out;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
      std::istringstream f(line);
      std::string sl, local, remote, st, txrx, trwhen, retr, uid, timeout, inode;
      f >> sl >> local >> remote >> st >> txrx >> trwhen >> retr >> uid >> timeout >> inode;
      if (!inodes.count(inode)) continue;
      TcpConnection c;
      c.remotePort = std::stoi(remote.substr(remote.find(':') + 1), nullptr, 16);
      c.state = std::stoi(st, nullptr, 16);
      c.timer = std::stoi(trwhen.substr(0, trwhen.find(':')), nullptr, 16);
      if (c.remotePort == port && c.state == 1) out.push_back(c);
    }
  }
  return out;
}

}  // namespace lockstep::testing
