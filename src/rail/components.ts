// Every rail component this build knows, in the order the context tries them.
// New rails (udp, tbsm, shm, ofi) are added here.

import type { Component } from './api.js';
import { selfComponent } from './self/component.js';
import { tcpComponent } from './tcp/component.js';
import { tbsmComponent } from './tbsm/component.js';
import { udpComponent } from './udp/component.js';
import { shmComponent } from './shm/component.js';
import { ofiComponent } from './ofi/component.js';

export const COMPONENTS: readonly Component[] = [selfComponent, tbsmComponent, shmComponent, tcpComponent, udpComponent, ofiComponent];
