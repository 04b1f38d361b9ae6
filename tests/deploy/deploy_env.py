"""What the deploy tests share besides fixtures: the deploy environment and the region (imported by
path, not as `conftest`, which names whichever conftest module was imported first)."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEPLOY_VENV = os.path.join(ROOT, ".venv-deploy")
REGION = "eu-west-1"
