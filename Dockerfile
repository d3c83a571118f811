# The crawler worker image: one process type that runs workflows and activities.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# Not `npm ci`: the lockfile lacks other platforms' optional binaries, which `npm ci` rejects
# as out of sync (see the Makefile); `npm install` installs the locked versions all the same.
RUN npm install --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY bench ./bench
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY bin ./bin
USER node
CMD ["node", "bin/crawl", "worker"]
