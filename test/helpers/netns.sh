#!/usr/bin/env bash
# Test hosts on one machine: network namespaces joined by veth pairs to a
# bridge in the root namespace. Namespace A also gets a device that is up but
# routes nowhere (a veth pair with both ends inside it, like a docker bridge
# that goes nowhere), created first so it is listed first: railcomm must not pick it.
#   netns.sh up TAG SUBNET   (SUBNET like 10.77.5: bridge .1, hosts .2, .3)
#   netns.sh down TAG
set -euo pipefail
cmd=$1 tag=$2
br="rcbr$tag" a="rc${tag}a" b="rc${tag}b"
if [ "$cmd" = up ]; then
  net=$3
  ip link add "$br" type bridge
  ip addr add "$net.1/24" dev "$br"
  ip link set "$br" up
  i=2
  for ns in "$a" "$b"; do
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    if [ "$ns" = "$a" ]; then
      ip -n "$ns" link add docker0 type veth peer name docker1
      ip -n "$ns" addr add "10.99.$tag.1/24" dev docker0
      ip -n "$ns" link set docker0 up
      ip -n "$ns" link set docker1 up
    fi
    ip link add "v$tag$i" type veth peer name "p$tag$i"
    ip link set "p$tag$i" netns "$ns"
    ip -n "$ns" link set "p$tag$i" name eth0
    ip -n "$ns" addr add "$net.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip link set "v$tag$i" master "$br"
    ip link set "v$tag$i" up
    i=$((i + 1))
  done
else
  # The hosts' veth ends in this namespace go first, by name: left to the
  # namespaces' deletion they linger a moment (the kernel cleans a namespace
  # up later), and an `up` with the same tag right after failed with
  # "RTNETLINK answers: File exists" (seen: the multirail tests skipped).
  ip link del "v${tag}2" 2>/dev/null || true
  ip link del "v${tag}3" 2>/dev/null || true
  ip netns del "$a" 2>/dev/null || true
  ip netns del "$b" 2>/dev/null || true
  ip link del "$br" 2>/dev/null || true
fi
