"""The review app's routes, one APIRouter per area: session.py (sign-in and sign-out, the only
routes open without a session), queue.py (the reviewer's queue, the rubric, showing and rating
one task), admin.py (reviewers' progress and revocation, for admins). Each route gets the app's
state and its signed-in reviewer through the dependencies of review.web; only review.app
includes these routers."""
