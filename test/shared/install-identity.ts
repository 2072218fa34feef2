// The install manifest's RBAC against what its ServiceAccounts did: the API server's audit log
// (`writeAuditPolicy`) of the controller and agents running with the tokens the kubelet projected
// for them (test/box/scenarios.test.ts), read by `auditOf`: a Forbidden request, and every rule of
// the manifest (`rulesOf`) no request used.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from '../cluster/paths';

const INSTALL_MANIFEST = path.join(REPO_ROOT, 'dist', 'juneau-install.k8s.yaml');
interface ManifestObject {
  kind: string;
  metadata: { name: string; namespace?: string };
  [key: string]: unknown;
}
export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

/** The objects of the synthesized install manifest (`npx cdk8s synth` writes it). */
export function installManifest(file = INSTALL_MANIFEST): ManifestObject[] {
  if (!fs.existsSync(file))
    throw new Error(`${file} is missing: run \`npx cdk8s synth\` (the RBAC audit takes its rules from it)`);
  return parseAllDocuments(fs.readFileSync(file, 'utf8'))
    .map((d) => d.toJS() as ManifestObject)
    .filter((o) => o && o.kind);
}

/** The rules that bind to ServiceAccount `name`: its ClusterRole's and Role's (named like it, or bound to it). */
export function rulesOf(manifest: ManifestObject[], name: string): PolicyRule[] {
  const bound = new Set(
    manifest
      .filter(
        (o) =>
          o.kind === 'RoleBinding' &&
          (o as unknown as { subjects?: Array<{ kind: string; name: string }> }).subjects?.some(
            (s) => s.kind === 'ServiceAccount' && s.name === name,
          ),
      )
      .map((o) => (o as unknown as { roleRef: { name: string } }).roleRef.name),
  );
  return manifest
    .filter(
      (o) =>
        (o.kind === 'ClusterRole' || o.kind === 'Role') &&
        (o.metadata.name === name || (o.kind === 'Role' && bound.has(o.metadata.name))),
    )
    .flatMap((o) => o.rules as PolicyRule[]);
}

/** Audit only the install ServiceAccounts' requests, at Metadata level (who, verb, resource, code). */
export function writeAuditPolicy(file: string, namespace: string): void {
  fs.writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'audit.k8s.io/v1',
      kind: 'Policy',
      omitStages: ['RequestReceived'],
      rules: [{ level: 'Metadata', userGroups: [`system:serviceaccounts:${namespace}`] }, { level: 'None' }],
    }),
  );
}

interface AuditEvent {
  stage: string;
  verb: string;
  user: { username: string };
  objectRef?: { apiGroup?: string; resource?: string; subresource?: string; namespace?: string; name?: string };
  responseStatus?: { code?: number };
  requestURI: string;
}

export interface AuditReport {
  /** Requests answered 403, e.g. `system:serviceaccount:juneau-system:juneau-agent get nodes/worker-1`. */
  readonly forbidden: string[];
  /** `user: verb group/resource` of a manifest rule that no request of that user used. */
  readonly unused: string[];
}

/** What the users did, against the rules the manifest gives them. */
export function auditOf(auditLog: string, rulesByUser: Record<string, PolicyRule[]>): AuditReport {
  const events = fs
    .readFileSync(auditLog, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as AuditEvent)
    // A watch is logged at ResponseStarted and completes only when it ends: one still open when
    // the log is read (a box's informers, never restarted) is used all the same. A refused request
    // completes without starting a response.
    .filter(
      (e) =>
        (e.stage === 'ResponseComplete' || (e.stage === 'ResponseStarted' && e.verb === 'watch')) &&
        e.user.username in rulesByUser &&
        e.objectRef,
    );
  const resourceOf = (e: AuditEvent) => [e.objectRef!.resource, e.objectRef!.subresource].filter(Boolean).join('/');
  const forbidden = events
    .filter((e) => e.responseStatus?.code === 403)
    .map((e) => `${e.user.username} ${e.verb} ${resourceOf(e)}${e.objectRef!.name ? `/${e.objectRef!.name}` : ''}`);
  const unused: string[] = [];
  for (const [user, rules] of Object.entries(rulesByUser)) {
    const mine = events.filter((e) => e.user.username === user);
    for (const r of rules) {
      for (const group of r.apiGroups) {
        for (const resource of r.resources) {
          for (const verb of r.verbs) {
            const used = mine.some(
              (e) =>
                (e.objectRef!.apiGroup ?? '') === group &&
                resourceOf(e) === resource &&
                e.verb === verb &&
                (!r.resourceNames || r.resourceNames.includes(e.objectRef!.name ?? '')),
            );
            if (!used) unused.push(`${user.split(':').pop()}: ${verb} ${group || 'core'}/${resource}`);
          }
        }
      }
    }
  }
  return { forbidden: [...new Set(forbidden)], unused: [...new Set(unused)] };
}
