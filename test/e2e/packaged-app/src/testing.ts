// @threadmill/nestjs/testing as installed from the tarball.
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';

const server = await RedisServer.start();
const client = new Redis(server.url);
const pong = await client.ping();
client.disconnect();
await server.stop();

// >>> ThreadmillTestingModule goes here after the merge of issue 29's testing part: boot AppModule with
// >>> overrideModule(ThreadmillModule).useModule(ThreadmillTestingModule.forRoot({ mode: 'immediate' })), enqueue
// >>> GreetService.greet and print its result, with no Redis at all.

console.log(JSON.stringify({ redis: pong }));
