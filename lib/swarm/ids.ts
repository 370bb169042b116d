// Swarm object IDs as swarmkit makes them: 25 characters of base 36 from 128 random bits.
import { randomBytes } from 'node:crypto'

export function swarmId (): string {
  const n = BigInt('0x' + randomBytes(16).toString('hex'))
  return n.toString(36).padStart(25, '0').slice(-25)
}

/** A join token in swarmkit's shape (SWMTKN-1-<cluster digest>-<secret>); single-node: nothing accepts it. */
export function joinToken (): string {
  const a = BigInt('0x' + randomBytes(32).toString('hex')).toString(36).padStart(50, '0').slice(-50)
  return `SWMTKN-1-${a}-${swarmId()}`
}

const ADJECTIVES = ['brave', 'calm', 'eager', 'fancy', 'gentle', 'happy', 'jolly', 'keen', 'lucid', 'merry', 'nifty',
  'proud', 'quirky', 'sharp', 'tender', 'vivid', 'wise', 'zealous']
const NAMES = ['albattani', 'bohr', 'curie', 'darwin', 'euler', 'fermi', 'galois', 'hopper', 'jang', 'kepler',
  'lovelace', 'meitner', 'noether', 'pascal', 'ritchie', 'shannon', 'turing', 'wozniak']

/** A name for a service created without one (dockerd picks adjective_surname). */
export function randomServiceName (taken: (n: string) => boolean): string {
  for (let i = 0; ; i++) {
    const a = ADJECTIVES[Math.floor(Math.random() * ADJECTIVES.length)] as string
    const b = NAMES[Math.floor(Math.random() * NAMES.length)] as string
    const n = i < 10 ? `${a}_${b}` : `${a}_${b}${i}`
    if (!taken(n)) return n
  }
}
