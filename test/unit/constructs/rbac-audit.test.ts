// The RBAC audit (test/shared/install-identity.ts auditOf) on a hand-written audit log: a 403 is
// reported as Forbidden, a rule is "used" only by its own user, verb, group, resource/subresource
// and (when it names them) resourceNames. The box scenarios (test/box/scenarios.test.ts) rely on it to catch missing and extra
// rules, so it must not call a rule used on a near miss.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { auditOf, type PolicyRule } from '../../shared/install-identity';
import { tempDir } from '../temp-dir';

const CONTROLLER = 'system:serviceaccount:juneau-system:juneau-controller';
const AGENT = 'system:serviceaccount:juneau-system:juneau-agent';

function event(
  user: string,
  verb: string,
  ref: { apiGroup?: string; resource: string; subresource?: string; name?: string },
  code = 200,
  stage = 'ResponseComplete',
) {
  return JSON.stringify({
    stage,
    verb,
    user: { username: user },
    objectRef: ref,
    responseStatus: { code },
    requestURI: '/x',
  });
}

function audit(lines: string[], rules: Record<string, PolicyRule[]>) {
  const file = path.join(tempDir('rbac-audit'), 'audit.log');
  fs.writeFileSync(file, lines.join('\n') + '\n');
  return auditOf(file, rules);
}

describe('the install RBAC audit', () => {
  test('a 403 of an install ServiceAccount is Forbidden; other users are ignored', () => {
    const report = audit(
      [
        event(AGENT, 'get', { resource: 'nodes', name: 'worker-1' }, 403),
        event('admin', 'delete', { resource: 'nodes', name: 'x' }, 403),
      ],
      { [AGENT]: [{ apiGroups: [''], resources: ['nodes'], verbs: ['get'] }] },
    );
    expect(report.forbidden).toEqual([`${AGENT} get nodes/worker-1`]);
  });

  test('a rule is used only by its own verb, group, resource and subresource, and user', () => {
    const rules = {
      [CONTROLLER]: [
        { apiGroups: ['juneau.loutres.me'], resources: ['elasticips/status'], verbs: ['patch'] },
        { apiGroups: ['juneau.loutres.me'], resources: ['elasticips'], verbs: ['patch', 'list'] },
        { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create'] },
      ],
      [AGENT]: [{ apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create'] }],
    };
    const report = audit(
      [
        event(CONTROLLER, 'patch', {
          apiGroup: 'juneau.loutres.me',
          resource: 'elasticips',
          subresource: 'status',
          name: 'a',
        }),
        event(CONTROLLER, 'list', { apiGroup: 'juneau.loutres.me', resource: 'elasticips' }, 200, 'ResponseStarted'),
        event(CONTROLLER, 'create', { apiGroup: 'events.k8s.io', resource: 'events' }),
      ],
      rules,
    );
    expect(report.unused.sort()).toEqual([
      'juneau-agent: create events.k8s.io/events',
      'juneau-controller: list juneau.loutres.me/elasticips',
      'juneau-controller: patch juneau.loutres.me/elasticips',
    ]);
  });

  test('a watch still open (logged at ResponseStarted only) uses its rule; another verb needs its response complete', () => {
    const rules = { [AGENT]: [{ apiGroups: ['apps'], resources: ['daemonsets'], verbs: ['watch', 'list'] }] };
    const started = (verb: string) =>
      event(AGENT, verb, { apiGroup: 'apps', resource: 'daemonsets' }, 200, 'ResponseStarted');
    expect(audit([started('watch'), started('list')], rules).unused).toEqual(['juneau-agent: list apps/daemonsets']);
  });

  test('a rule naming resourceNames is used only by a request for one of them', () => {
    const rules = {
      [CONTROLLER]: [
        {
          apiGroups: ['coordination.k8s.io'],
          resources: ['leases'],
          verbs: ['update'],
          resourceNames: ['juneau-controller'],
        },
      ],
    };
    expect(
      audit(
        [event(CONTROLLER, 'update', { apiGroup: 'coordination.k8s.io', resource: 'leases', name: 'other' })],
        rules,
      ).unused,
    ).toEqual(['juneau-controller: update coordination.k8s.io/leases']);
    expect(
      audit(
        [
          event(CONTROLLER, 'update', {
            apiGroup: 'coordination.k8s.io',
            resource: 'leases',
            name: 'juneau-controller',
          }),
        ],
        rules,
      ).unused,
    ).toEqual([]);
  });
});
