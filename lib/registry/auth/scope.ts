// Docker token scopes: `resourcetype[(class)]:resourcename:action[,action]`. The name may hold ':' (host:port), so the
// type ends at the first ':' and the actions start after the last one. Pure.

export type Action = 'pull' | 'push' | 'delete' | '*'
export const ACTIONS: ReadonlySet<string> = new Set(['pull', 'push', 'delete', '*'])

export interface AccessEntry {
  type: string
  name: string
  actions: string[]
}

/** Parses one or more space-separated scopes; malformed ones are skipped (token servers ignore them). */
export function parseScopes (values: string[]): AccessEntry[] {
  const out: AccessEntry[] = []
  for (const value of values) {
    for (const scope of value.split(' ')) {
      const first = scope.indexOf(':')
      const last = scope.lastIndexOf(':')
      if (first <= 0 || last === first) continue
      const type = scope.slice(0, first).replace(/\(.*\)$/, '')
      const name = scope.slice(first + 1, last)
      const actions = scope.slice(last + 1).split(',').filter((a) => a !== '')
      if (name === '' || actions.length === 0) continue
      out.push({ type, name, actions })
    }
  }
  return out
}

export function formatScope (e: AccessEntry): string {
  return `${e.type}:${e.name}:${e.actions.join(',')}`
}

/** Whether a grant list allows an action on a resource ('*' grants everything). */
export function grants (list: readonly AccessEntry[], type: string, name: string, action: string): boolean {
  return list.some((e) => e.type === type && e.name === name && (e.actions.includes(action) || e.actions.includes('*')))
}
