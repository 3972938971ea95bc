#include "tests/support/process.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#ifndef LOCKSTEP_SOURCE_DIR
#error "LOCKSTEP_SOURCE_DIR must be defined by the build"
#endif

namespace lockstep::testing {

CommandResult run(const std::vector<std::string>& argv, const std::string& input) {
  CommandResult result;
  // Close-on-exec: a program another thread starts meanwhile (a test runs helm
  // in one thread and polls with kubectl in another) must not hold these pipes
  // open, or this call would read until that program ends, not this one.
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    result.err = std::strerror(errno);
    return result;
  }
  pid_t pid = fork();
  if (pid == 0) {
    // dup2 clears close-on-exec on the copy; a pipe end that already is the
    // target keeps it, so clear that by hand.
    auto redirect = [](int from, int to) {
      if (from == to)
        fcntl(to, F_SETFD, 0);
      else
        dup2(from, to);
    };
    redirect(in[0], 0);
    redirect(out[1], 1);
    redirect(err[1], 2);
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]})
      if (fd > 2) close(fd);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  // Write stdin and read both outputs together so a large output cannot deadlock.
  size_t written = 0;
  int inFd = in[1];
  if (input.empty()) {
    close(inFd);
    inFd = -1;
  } else {
    fcntl(inFd, F_SETFL, O_NONBLOCK);
  }
  bool outOpen = true, errOpen = true;
  char buf[65536];
  while (outOpen || errOpen || inFd >= 0) {
    pollfd fds[3];
    int n = 0;
    if (outOpen) fds[n++] = {out[0], POLLIN, 0};
    if (errOpen) fds[n++] = {err[0], POLLIN, 0};
    if (inFd >= 0) fds[n++] = {inFd, POLLOUT, 0};
    if (poll(fds, n, -1) < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == inFd) {
        ssize_t w = write(inFd, input.data() + written, input.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        if (w < 0 || written == input.size()) {
          close(inFd);
          inFd = -1;
        }
        continue;
      }
      ssize_t r = read(fds[i].fd, buf, sizeof buf);
      bool isOut = fds[i].fd == out[0];
      if (r <= 0) {
        (isOut ? outOpen : errOpen) = false;
      } else {
        (isOut ? result.out : result.err).append(buf, static_cast<size_t>(r));
      }
    }
  }
  close(out[0]);
  close(err[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

std::map<std::string, std::string> exportsOf(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const std::string prefix = "export ";
    if (line.rfind(prefix, 0) != 0) continue;
    auto eq = line.find('=', prefix.size());
    if (eq == std::string::npos) continue;
    out[line.substr(prefix.size(), eq - prefix.size())] = line.substr(eq + 1);
  }
  return out;
}

std::string sourcePath(const std::string& relative) {
  return std::string(LOCKSTEP_SOURCE_DIR) + "/" + relative;
}

}  // namespace lockstep::testing
