// `npm pack` builds the tarball, and a scratch project installs it offline (an empty npm
// cache, --offline: nothing from a registry) and imports it by its name.

import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const npm = process.env.NPM || 'npm';
const have = spawnSync(npm, ['--version'], { encoding: 'utf8' }).status === 0;

function run(cmd, args, cwd, env = {}) {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', timeout: 60000, env: { ...process.env, ...env } });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}: ${r.stdout}${r.stderr}`);
  return r.stdout;
}

test('npm pack, then an offline npm install of the tarball in a scratch project', { skip: have ? false : 'no npm', timeout: 120000 }, () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'slotd-node-pack-'));
  try {
    const cache = path.join(tmp, 'cache');
    const env = { npm_config_cache: cache, npm_config_update_notifier: 'false' };
    const out = JSON.parse(run(npm, ['pack', '--json', '--pack-destination', tmp], root, env));
    const tgz = path.join(tmp, out[0].filename);
    assert.ok(fs.existsSync(tgz));
    const files = out[0].files.map((f) => f.path).sort();
    assert.deepEqual(files, ['README.md', 'package.json', 'src/index.d.ts', 'src/index.js']);

    const proj = path.join(tmp, 'shop');
    fs.mkdirSync(proj);
    fs.writeFileSync(path.join(proj, 'package.json'), JSON.stringify({ name: 'shop', version: '1.0.0', type: 'module', private: true }));
    run(npm, ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', tgz], proj, env);
    fs.writeFileSync(path.join(proj, 'main.js'),
      "import { connect, SlotError, OPS } from 'slotd-client';\n" +
      "console.log(JSON.stringify({ connect: typeof connect, SlotError: typeof SlotError, ops: Object.keys(OPS).length }));\n");
    const got = JSON.parse(run(process.execPath, ['main.js'], proj));
    assert.deepEqual(got, { connect: 'function', SlotError: 'function', ops: 32 });
    assert.ok(fs.existsSync(path.join(proj, 'node_modules', 'slotd-client', 'src', 'index.d.ts')));
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
