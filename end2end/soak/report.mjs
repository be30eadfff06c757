// What the soak measured, as tables: requests and answers per kind, failures by kind,
// answers per instance, the audit check, recovery per fault and memory.
import { createHash } from 'node:crypto';
import { KINDS, AUDITED } from './load.mjs';
import { psql } from './processes.mjs';

/** Failures: outcomes other than an answer, a 429, or an `/mcp` session gone (404). */
const failed = (outcome) => !['ok', 'rate', 'gone'].includes(outcome);

/** How long after a fault's end its failures are counted as its own. */
const WINDOW_MS = 30_000;

/**
 * Per fault, per kind: the time from the fault's end (`end`, the restart done) to the
 * first success after the kind's last failure in the fault's window (from its start to the
 * next fault's start, at most `WINDOW_MS` after its end). 0 when the kind did not fail
 * after the end; `null` when it never succeeded again in the window. The fault's figure is
 * the longest of its kinds.
 */
export function recoveries(records, faults, loadEnd) {
  return faults.map((fault, i) => {
    const windowEnd = Math.min(faults[i + 1]?.start ?? loadEnd, fault.end + WINDOW_MS);
    const inWindow = records.filter((r) => r.t >= fault.start && r.t < windowEnd);
    const perKind = {};
    for (const kind of KINDS) {
      const mine = inWindow.filter((r) => r.kind === kind);
      const failures = mine.filter((r) => failed(r.outcome));
      if (!failures.length) continue;
      const last = failures.at(-1).t;
      const next = mine.find((r) => r.t > last && r.outcome === 'ok');
      perKind[kind] = {
        failures: failures.length,
        recovery: next ? Math.max(0, next.t - fault.end) : null,
      };
    }
    const times = Object.values(perKind).map((k) => k.recovery);
    const recovery = times.includes(null) ? null : Math.max(0, ...times);
    return { ...fault, perKind, recovery };
  });
}

const digest = (id) => createHash('sha256').update(JSON.stringify({ n: id })).digest('hex');

/**
 * Every acknowledged tool call against the audit log: its row found by kind and the digest
 * of its unique arguments, with outcome `ok`. Rows with no acknowledged call behind them
 * are calls whose answer was lost on the way (a killed instance, a dropped connection).
 */
export function auditCheck(database, recorder) {
  const rows = psql(database, `SELECT kind, payload->>'arguments_sha256', count(*) FROM audit_log
    WHERE kind IN ('app_tool_call', 'playground_tool_call', 'mcp_tool_call') AND payload->>'outcome' = 'ok'
    GROUP BY 1, 2`);
  const found = new Map();
  for (const line of rows.split('\n').filter(Boolean)) {
    const [kind, sha, count] = line.split('|');
    found.set(`${kind} ${sha}`, Number(count));
  }
  return Object.values(AUDITED).map((kind) => {
    const ids = recorder.acknowledged[kind];
    let once = 0; let missing = 0; let duplicated = 0;
    const expected = new Set();
    for (const id of ids) {
      const key = `${kind} ${digest(id)}`;
      expected.add(key);
      const count = found.get(key) ?? 0;
      if (count === 1) once += 1;
      else if (count === 0) missing += 1;
      else duplicated += 1;
    }
    let unanswered = 0;
    for (const [key, count] of found) if (key.startsWith(`${kind} `) && !expected.has(key)) unanswered += count;
    return { kind, expected: ids.length, once, missing, duplicated, unanswered };
  });
}

const ms = (t) => (t === null ? 'not recovered' : `${(t / 1000).toFixed(1)} s`);

function table(header, rows) {
  const lines = [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`];
  for (const row of rows) lines.push(`| ${row.join(' | ')} |`);
  return lines.join('\n');
}

/** The report, as markdown tables. */
export function render({ recorder, faults, audit, chain, memory, instances, seconds }) {
  const { records } = recorder;
  const out = [];
  const per = (kind) => records.filter((r) => r.kind === kind);
  out.push(`### Requests (${seconds} s of load)`, '');
  out.push(table(['kind', 'made', 'answered (2xx)', '429', 'session gone (404, client re-initializes)', 'failed'],
    KINDS.map((kind) => {
      const mine = per(kind);
      const count = (test) => mine.filter((r) => test(r.outcome)).length;
      return [kind, mine.length, count((o) => o === 'ok'), count((o) => o === 'rate'), count((o) => o === 'gone'), count(failed)];
    })));
  out.push('', '### Failures by kind', '');
  const byFailure = new Map();
  for (const r of records.filter((x) => failed(x.outcome))) {
    const key = `${r.kind}\u0000${r.outcome}`;
    byFailure.set(key, (byFailure.get(key) ?? 0) + 1);
  }
  const failureRows = [...byFailure].map(([key, n]) => [...key.split('\u0000'), n]);
  out.push(failureRows.length ? table(['kind', 'outcome', 'count'], failureRows) : 'none');
  out.push('', '### Answers per instance', '');
  out.push(table(['instance', ...KINDS], instances.map((name) => [
    name, ...KINDS.map((kind) => per(kind).filter((r) => r.instance === name).length),
  ])));
  out.push('', '### Audit rows of acknowledged tool calls', '');
  out.push(table(['audit kind', 'acknowledged calls', 'one row each', 'no row', 'more than one row', 'rows of calls not acknowledged'],
    audit.map((a) => [a.kind, a.expected, a.once, a.missing, a.duplicated, a.unanswered])));
  out.push('', `Chain: \`strad audit verify\` exited ${chain.code} (${chain.code === 0 ? 'intact' : 'broken'}): ${chain.output.trim().split('\n').at(-1)}`);
  out.push('', '### Faults', '');
  out.push(table(['fault', 'at', 'down for', 'failed requests', 'recovery after the restart', 'slowest kind'],
    faults.map((f) => {
      const kinds = Object.entries(f.perKind);
      const failures = kinds.reduce((n, [, k]) => n + k.failures, 0);
      const slowest = kinds.sort((a, b) => (b[1].recovery ?? Infinity) - (a[1].recovery ?? Infinity))[0];
      return [f.name, `${(f.start / 1000).toFixed(0)} s`, ms(f.end - f.start), failures, ms(f.recovery), slowest ? slowest[0] : '–'];
    })));
  out.push('', '### Memory (VmRSS)', '');
  out.push(table(['instance', 'before the load', 'after'], memory.map((m) => [m.name, `${m.before.toFixed(0)} MiB`, m.after])));
  return out.join('\n');
}
