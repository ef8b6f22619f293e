// Observability hooks: node:diagnostics_channel channels named railcomm:*.
// Publishing costs nothing when nobody subscribes (checked with hasSubscribers).

import diagnostics_channel from 'node:diagnostics_channel';

export const channels = {
  connect: diagnostics_channel.channel('railcomm:connect'),
  protocol: diagnostics_channel.channel('railcomm:protocol-selected'),
  peerFailed: diagnostics_channel.channel('railcomm:peer-failed'),
  retransmit: diagnostics_channel.channel('railcomm:retransmit'),
  laneFailed: diagnostics_channel.channel('railcomm:lane-failed'),
  laneJoined: diagnostics_channel.channel('railcomm:lane-joined'),
};
