// MPS detection (src/cuda/mps.ts): the control pipe where CUDA_MPS_PIPE_DIRECTORY (or the default) says.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mpsPipeDirectory, mpsRunning, mpsText } from '../../dist/cuda/mps.js';

test('MPS: found by its control pipe in CUDA_MPS_PIPE_DIRECTORY, else /tmp/nvidia-mps; the text says what to do when absent', () => {
  const dir = mkdtempSync(join(tmpdir(), 'railcomm-mps-'));
  try {
    const env = { CUDA_MPS_PIPE_DIRECTORY: dir };
    assert.equal(mpsPipeDirectory({}), '/tmp/nvidia-mps');
    assert.equal(mpsPipeDirectory(env), dir);
    assert.equal(mpsRunning(env), false);
    assert.match(mpsText(env), /not running .*nvidia-cuda-mps-control -d.*one process per GPU/);
    writeFileSync(join(dir, 'control'), '');
    assert.equal(mpsRunning(env), true);
    assert.match(mpsText(env), /control daemon found/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
