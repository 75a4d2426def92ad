# --------------------------------------------------------
# THOR
# Licensed under The MIT License
# Written by Axel Sauer (axel.sauer@tum.de)
# --------------------------------------------------------

from os.path import dirname, abspath
import torch
from trackers.THOR_modules.wrapper import THOR_SiamRPN

# SiamRPN Imports
from trackers.SiamRPN.net import SiamRPN
from trackers.SiamRPN.siamrpn import SiamRPN_init, SiamRPN_track


class Tracker():
    def __init__(self):
        use_cuda = torch.cuda.is_available()
        self.device = torch.device("cuda" if use_cuda else "cpu")
        self.mask = False
        self.temp_mem = None

    def init_func(self, im, pos, sz):
        raise NotImplementedError

    def track_func(self, state, im):
        raise NotImplementedError

    def setup(self, im, target_pos, target_sz, f=0):
        state = self.init_func(im, target_pos, target_sz)
        self.temp_mem.setup(im, target_pos, target_sz, f)
        return state

    def track(self, im, state):
        state = self.track_func(state, im)
        self.temp_mem.update(im, state['crop'], state['target_pos'], state['target_sz'])
        return state


class SiamRPN_Tracker(Tracker):
    def __init__(self, cfg):
        super(SiamRPN_Tracker, self).__init__()
        self.cfg = cfg

        # setting up the model
        model_path = dirname(abspath(__file__)) + '/SiamRPN/model.pth'
        model = SiamRPN()
        model.load_state_dict(torch.load(model_path, map_location=('cpu'
                   if str(self.device) == 'cpu' else None)))
        self.model = model.eval().to(self.device)

        # set up template memory
        self.temp_mem = THOR_SiamRPN(cfg=cfg['THOR'], net=self.model)

    def init_func(self, im, pos, sz):
        return SiamRPN_init(im, pos, sz, self.cfg['tracker'])

    def track_func(self, state, im):
        return SiamRPN_track(state, im, self.temp_mem)
