// Debian's nginx as the load balancer in front of several strad instances, on loopback:
// `http` is the inside of the configuration's `http {}` block (upstreams and servers); the
// rest (temp paths, pid, logs) lives in a directory of its own, removed on stop.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { listening } from './ports.mjs';

const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((p) => existsSync(p)) || 'nginx';

export async function startNginx(port, http) {
  const dir = mkdtempSync(path.join(tmpdir(), 'strad-nginx-'));
  const conf = path.join(dir, 'nginx.conf');
  writeFileSync(conf, `
daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  ${http}
}
`);
  const child = spawn(NGINX, ['-c', conf, '-p', dir], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`nginx exited: ${stderr}`);
    if (await listening(port)) break;
    if (Date.now() > deadline) throw new Error(`nginx did not listen: ${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    errors: () => (existsSync(`${dir}/error.log`) ? readFileSync(`${dir}/error.log`, 'utf8') : ''),
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** What every proxied location needs for strad: the Host as the browser sent it (with its
 * port: the sandbox origin is told apart by it), keep-alive upstream, streamed answers. */
export const PROXY = `
    proxy_http_version 1.1;
    proxy_set_header Host $http_host;
    proxy_set_header Connection "";
    proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
    proxy_set_header X-Forwarded-Proto $scheme;
    proxy_buffering off;
    proxy_read_timeout 300s;`;
