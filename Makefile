# Each target does all the set-up it needs, so a fresh clone works with one command.
# `make setup` is idempotent: a second run downloads and rebuilds nothing.
.PHONY: setup tools build demo test typecheck lint compose-check clean

SRC := $(shell find src bench -name '*.ts' 2>/dev/null) tsconfig.json tsconfig.build.json

setup: node_modules/.installed tools dist/.built

node_modules/.installed: package.json package-lock.json
	# npm 11 here writes lockfiles without other platforms' optional binaries, which `npm ci` then
	# rejects as out of sync; `npm install` installs the locked versions all the same.
	npm install --no-audit --no-fund
	touch $@

tools:
	bash scripts/setup-tools.sh

dist/.built: node_modules/.installed $(SRC)
	npm run --silent build
	touch $@

build: dist/.built

demo: setup
	node bin/crawl demo

typecheck: node_modules/.installed
	npm run --silent typecheck

lint: node_modules/.installed
	npm run --silent lint

# The whole suite: type check, lint, then every test against the real pinned servers.
test: setup typecheck lint
	UV_THREADPOOL_SIZE=16 npx jest

compose-check:
	docker-compose -f docker-compose.yml config --quiet

clean:
	rm -rf dist node_modules/.installed
