"""Hardware drivers: shoe (serial), sensors/buttons/lights (GPIO), camera reader.

Drivers turn hardware into table events and carry out light effects; they hold
no game logic. (Filled in by the drivers issue.)
"""
