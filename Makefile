# Starmall: `make run` starts the whole shop, `make test` runs the suite.
# Both create .venv from pyproject.toml on first use (and again when pyproject.toml changes).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint bench clean-var

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

## run: migrate, load demo data, then (supervisord) web :8000 + Celery worker/beat + WeChat sandbox :8001 + embedded Redis
##      WEB_BIND=127.0.0.1:8100 WECHAT_SANDBOX_PORT=8101 make run   moves both ports
run: $(STAMP)
	$(BIN)/python manage.py runshop

## test: the whole suite (embedded SQLite/Redis, or DATABASE_URL / REDIS_URL when set)
test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

## lint: ruff's rules and its formatter in check mode (settings in pyproject.toml [tool.ruff]); `ruff format .` fixes the layout
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

## bench: speed targets (flash sale vs bare SQL on PostgreSQL + Redis, storm, browse; almanac; order create; back-office dashboard with 100k orders)
bench: $(STAMP)
	$(BIN)/python bench/run.py

## clean-var: forget the demo shop's data (SQLite file, embedded Redis data, beat schedule)
clean-var:
	-$(BIN)/python -c "from starmall import embedded_redis; embedded_redis.stop()"
	rm -rf var
