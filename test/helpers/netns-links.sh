#!/usr/bin/env bash
# Two test hosts (network namespaces, helpers/netns.sh: bridge, eth0) joined
# also by two direct links, each a veth pair on a subnet of its own: two
# "NICs" for multirail. The wire-up service stays on the bridge (eth0), so a
# link can be cut without cutting the job from its launcher.
#   netns-links.sh up TAG     (hosts rcTAGa, rcTAGb; links l1 10.81.TAG.1/.2, l2 10.82.TAG.1/.2)
#   netns-links.sh down TAG
set -euo pipefail
cmd=$1 tag=$2
here=$(dirname "$0")
a="rc${tag}a" b="rc${tag}b"
if [ "$cmd" = up ]; then
  "$here/netns.sh" up "$tag" "10.77.$tag"
  for l in 1 2; do
    ip link add "la$tag$l" netns "$a" type veth peer name "lb$tag$l" netns "$b"
    ip -n "$a" link set "la$tag$l" name "l$l"
    ip -n "$b" link set "lb$tag$l" name "l$l"
    ip -n "$a" addr add "10.8$l.$tag.1/24" dev "l$l"
    ip -n "$b" addr add "10.8$l.$tag.2/24" dev "l$l"
    ip -n "$a" link set "l$l" up
    ip -n "$b" link set "l$l" up
  done
  for ns in "$a" "$b"; do
    ip netns exec "$ns" nft add table inet rclanes
    ip netns exec "$ns" nft add chain inet rclanes out '{ type filter hook output priority 0; }'
  done
else
  "$here/netns.sh" down "$tag"
fi
