// The apparent size of a volume's tree for `system df`, walked with direct (synchronous) calls: a thousand small
// volumes cost a thousand thread-pool round trips otherwise. The walk yields to the event loop every few hundred
// entries, so a large volume does not hold the daemon.
import { lstatSync, readdirSync } from 'node:fs'
import { join } from 'node:path'

const ENTRIES_PER_TURN = 512

export async function dirSizeSync (root: string): Promise<number> {
  let total = 0
  let budget = ENTRIES_PER_TURN
  const stack = [root]
  while (stack.length > 0) {
    const dir = stack.pop() as string
    let entries
    try { entries = readdirSync(dir, { withFileTypes: true }) } catch { continue }
    for (const e of entries) {
      const p = join(dir, e.name)
      if (e.isDirectory()) stack.push(p)
      else {
        try { total += lstatSync(p).size } catch { /* vanished */ }
      }
      if (--budget === 0) {
        budget = ENTRIES_PER_TURN
        await new Promise<void>((resolve) => { setImmediate(resolve) })
      }
    }
  }
  return total
}
