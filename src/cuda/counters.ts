// Counters of the device datapaths on this rank (one module instance per
// thread rank): which path each device message took, and every fallback to a
// slower one, so none happens silently. --stats prints them under `cuda`.

export const cudaCounters = {
  /** Device messages at or under RAILCOMM_CUDA_EAGER: staged through pinned host memory and sent eagerly. */
  eagerStaged: 0,
  /** Large device messages read by the receiver through CUDA IPC (one device-to-device copy). */
  ipcSends: 0,
  /** Large device messages to a thread rank of this process (or to itself): one direct device copy. */
  directSends: 0,
  /** Large device messages streamed through pinned host chunks (another host, or no IPC with that peer). */
  stagedSends: 0,
  /** ... of which: the IPC negotiation with the peer was still under way (the first message asks). */
  stagedNegotiating: 0,
  /** ... of which: the peer cannot open our handles (another host, GPU not visible or not accessible, RAILCOMM_CUDA_IPC=0 there). */
  stagedNoIpc: 0,
  /** ... of which: RAILCOMM_CUDA_IPC=0 here. */
  stagedIpcOff: 0,
  /** ... of which: the memory cannot be exported (not from cuMemAlloc: a pool or virtual-memory allocation). */
  stagedNotExportable: 0,
  /** ... of which: the receiver could not open our handle after agreeing to (it fell back, and stops IPC with us). */
  stagedOpenFailed: 0,
  /** Receives copied from a peer's device memory straight into the receive buffer (IPC or direct). */
  deviceRecvs: 0,
  /** Device receives whose data came from host memory (a staged or host message) and was uploaded. */
  uploadedRecvs: 0,
  /** Pinned host chunks sent by staged device messages. */
  stagedChunks: 0,
  /** Allreduce on device arrays combined on the GPU (kernel), and through host staging. */
  gpuReductions: 0,
  stagedCollectives: 0,
};

export type CudaCounters = typeof cudaCounters;
