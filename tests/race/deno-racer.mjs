// Deno side of the race: reads its orders as JSON from argv, races, prints the log as JSON on stdout.
import * as api from "celld-edge";
import { race } from "./racer.mjs";

const orders = JSON.parse(Deno.args[0]);
const result = await race({ api, ...orders });
console.log(JSON.stringify(result));
